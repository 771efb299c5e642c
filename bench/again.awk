# again.awk - bench/run.sh under BENCH_ONLY: the new rows (the first file) and, of the results
# file (the second), the rows not measured again (row_key, fields.awk): what replaces it
FNR == NR { if (/^(RESULT|TRANSCRIPT) /) again[row_key()] = 1; next }
/^(RESULT|TRANSCRIPT) / && !(row_key() in again)
