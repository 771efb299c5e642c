# bench/ch12_gpt.sh - ch12's measurements, sourced by bench/run.sh (measure is defined there): a
# training step of every version at GPT-2 124M's shape on random tokens (T 1024, batch 8) and at
# the Shakespeare model's, each beside PyTorch's step at the same shape (bf16 autocast, eager and
# compiled); the Shakespeare model's validation loss after 2000 steps; one batch's gradient
# against PyTorch's in fp32 from the same checkpoint and batch; training against PyTorch's
measure ./gpt --synthetic --bench
measure python3 ../bench/torch_gpt.py speed 12,12,768,1024,8
# the largest batch both fit (64: llm.c's; 128 is past PyTorch's memory with its graphs): the
# last version alone (every version's buffers at once would not fit), beside PyTorch's
measure ./gpt 9 --synthetic --batch 64 --bench
measure python3 ../bench/torch_gpt.py speed 12,12,768,1024,64
measure ./gpt --bench
measure python3 ../bench/torch_gpt.py speed 6,6,384,256,32 84
# the Shakespeare model: 2000 steps (its validation loss's RESULT row), and for the README the
# run's log (the first step, every 500th, the validations, the summary) and a 500-character
# sample from its checkpoint, as TRANSCRIPT lines (bench/fill_readmes.awk's transcript blocks)
shakespeare_run() {
    local d s
    d=$(mktemp -d) || return 1
    ./gpt --steps 2000 --eval-every 500 --save "$d/s.ckpt" >"$d/log" 2>&1
    s=$?
    grep '^RESULT ' "$d/log"
    grep -E '^gpt: |^step +(1|[0-9]*[05]00):' "$d/log" | grep -v '^gpt: saved' | sed 's/^/TRANSCRIPT name=gpt_train /'
    if [ $s = 0 ]; then
        ./gpt --load "$d/s.ckpt" --steps 0 --sample 500 --temperature 0.8 --seed 1 >"$d/sample" 2>&1
        s=$?
        echo "./gpt --load shakespeare.ckpt --steps 0 --sample 500 --temperature 0.8 --seed 1" | sed 's/^/TRANSCRIPT name=gpt_sample $ /'
        grep -v '^gpt: ' "$d/sample" | sed 's/^/TRANSCRIPT name=gpt_sample /'
    fi
    [ $s = 0 ] || cat "$d/log" "$d/sample" 2>/dev/null | tail -5
    rm -rf "$d"
    return $s
}
measure shakespeare_run
# the comparison with PyTorch: version 0 (fp32, its tight tolerance) and the default version
# (the fastest this GPU runs, within its own arithmetic's tolerance), from one checkpoint
measure bash -c 'd=$(mktemp -d) && ./gpt --quiet --layers 2 --heads 2 --channels 128 --context 64 --batch 4 --steps 0 --save $d/c.ckpt && ./gpt 0 --quiet --load $d/c.ckpt --batch 4 --grads $d/c0.grads && python3 ../bench/torch_gpt.py compare $d/c.ckpt $d/c0.grads ../datasets/shakespeare.txt 1 && ./gpt --quiet --load $d/c.ckpt --batch 4 --grads $d/c.grads && python3 ../bench/torch_gpt.py compare $d/c.ckpt $d/c.grads ../datasets/shakespeare.txt 1; s=$?; rm -rf $d; exit $s'
# training against PyTorch's, step for step from the same checkpoint: 20 steps of version 0 in
# fp32 (the weights agree), and the default version's 2000 steps against PyTorch's in bf16
# autocast (the validation losses within 0.03)
measure bash -c 'd=$(mktemp -d) && ./gpt --quiet --steps 0 --save $d/s.ckpt && ./gpt 0 --quiet --load $d/s.ckpt --steps 20 --save $d/e.ckpt && python3 ../bench/torch_gpt.py train $d/s.ckpt $d/e.ckpt ../datasets/shakespeare.txt 1 32 1e-3 100 0.1 1 20 fp32; s=$?; rm -rf $d; exit $s'
measure bash -c 'd=$(mktemp -d) && ./gpt --quiet --steps 0 --save $d/s.ckpt && ./gpt --quiet --load $d/s.ckpt --steps 2000 --save $d/e.ckpt && python3 ../bench/torch_gpt.py train $d/s.ckpt $d/e.ckpt ../datasets/shakespeare.txt 1 32 1e-3 100 0.1 1 20 bf16; s=$?; rm -rf $d; exit $s'
