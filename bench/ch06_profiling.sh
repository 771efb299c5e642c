# bench/ch06_profiling.sh - what `make bench` measures in ch06_profiling (sourced by bench/run.sh)
measure ./events
measure ./bandwidth
measure ./divergence
measure ./occupancy
measure ./occupancy 1 --smem 49152
measure ./streams
measure ./contexts
measure ./streams --per-stream-events
