# bench/ch12_gpt.sh - ch12's measurements, sourced by bench/run.sh (measure is defined there): the
# training step at GPT-2 124M's shape on random tokens (T 1024, batch 8) and the small model on
# Shakespeare (its tokens/s and its validation loss after 2000 steps), each beside PyTorch's step
# at the same shape (bf16 autocast, eager and compiled)
measure ./gpt --synthetic --steps 20
measure python3 ../bench/torch_gpt.py speed 12,12,768,1024,8
measure ./gpt --steps 2000 --eval-every 500
measure python3 ../bench/torch_gpt.py speed 6,6,384,256,32 84
# one batch's gradient, ./gpt's against PyTorch's in fp32, from the same checkpoint and batch
measure bash -c 'd=$(mktemp -d) && ./gpt --quiet --layers 2 --heads 2 --channels 64 --context 64 --batch 4 --steps 0 --save $d/c.ckpt && ./gpt --quiet --load $d/c.ckpt --batch 4 --grads $d/c.grads && python3 ../bench/torch_gpt.py compare $d/c.ckpt $d/c.grads ../datasets/shakespeare.txt 1; s=$?; rm -rf $d; exit $s'
