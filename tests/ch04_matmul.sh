# tests/ch04_matmul.sh - cases for ch04_matmul, sourced by tests/run.sh (helpers are defined there).
bad_input 2 ./matmul --bogus
bad_input 2 ./matmul --size 0
bad_input 2 ./matmul --size 2,3
bad_input 2 ./matmul --size 1,2,3,4
bad_input 2 ./matmul --size 100000
bad_input 2 ./matmul 7
bad_input 2 ./matmul --block 33
bad_input 0 ./matmul --help
no_gpu ./matmul

gpu_check ./matmul --check-only --size 1,1,1
gpu_check ./matmul --check-only --size 1000,1023,777
gpu_check ./matmul --check-only --size 17,33,65
gpu_check ./matmul --check-only --size 128,128,13
gpu_check ./matmul --check-only --size 256,260,100
gpu_check ./matmul --check-only --size 513
gpu_check ./matmul --check-only --size 2048
gpu_check ./matmul 1 --check-only --size 100,200,50 --block 7
gpu_check ./matmul --size 256 --iters 2
