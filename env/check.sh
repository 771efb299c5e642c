#!/usr/bin/env bash
# env/check.sh - is this machine ready for the lab book? (`make env` runs it)
#
# Checks, each printed with ✓ or ✗ and, for ✗, the fix:
#   the C compiler and make; nvcc and its version; the driver (nvidia-smi) and the CUDA
#   version it supports against the toolkit's; every GPU's name and compute capability and
#   the ARCH the build will use, and that each GPU is sm_75 or newer; python3, and the optional
#   tools compute-sanitizer, ncu and cuda-gdb; cudart, cuBLAS, cuFFT, cuRAND and NVRTC; WSL and
#   its libcuda; finally a tiny kernel compiled and run.
# Exit 0 when everything is ready, 1 otherwise (with the reasons listed at the end).
set -u
cd "$(dirname "$0")/.." || exit 1
CUDA_PATH=${CUDA_PATH:-/usr/local/cuda}
problems=()

OLDEST_SM=75 # the oldest GPU every program builds and runs on (README, "What you need")

ok()  { printf '  \342\234\223 %s\n' "$1"; }
# a tool only some labs need: missing is a warning with the fix, not a failure
opt() { printf '  - %s\n      fix: %s\n' "$1" "$2"; }
bad() { printf '  \342\234\227 %s\n      fix: %s\n' "$1" "$2"; problems+=("$1"); }
note() { printf '    %s\n' "$1"; }

echo "lab book environment check"

# ---- host compiler and make
if command -v gcc >/dev/null 2>&1; then ok "gcc $(gcc -dumpfullversion 2>/dev/null)"
else bad "gcc not found" "install a C compiler (Debian/Ubuntu: sudo apt-get install build-essential)"; fi
if command -v make >/dev/null 2>&1; then ok "$(make --version | head -n 1)"
else bad "make not found" "install make (Debian/Ubuntu: sudo apt-get install make)"; fi

# ---- nvcc
NVCC=""
if command -v nvcc >/dev/null 2>&1; then NVCC=$(command -v nvcc)
elif [ -x "$CUDA_PATH/bin/nvcc" ]; then NVCC=$CUDA_PATH/bin/nvcc; fi
toolkit_version=""
if [ -n "$NVCC" ]; then
    toolkit_version=$("$NVCC" --version | sed -n 's/.*release \([0-9][0-9.]*\).*/\1/p')
    if command -v nvcc >/dev/null 2>&1; then ok "nvcc $toolkit_version ($NVCC)"
    else
        ok "nvcc $toolkit_version at $NVCC (the Makefiles find it through CUDA_PATH)"
        note "not on PATH: for your own use, export PATH=$CUDA_PATH/bin:\$PATH"
    fi
    major=${toolkit_version%%.*}
    if [ "${major:-0}" -lt 12 ]; then
        bad "CUDA toolkit $toolkit_version is older than 12" "install CUDA toolkit 12 or newer from developer.nvidia.com/cuda-downloads"
    fi
else
    bad "nvcc not found (not on PATH, not in $CUDA_PATH/bin)" \
        "install the CUDA toolkit, then export PATH=/usr/local/cuda/bin:\$PATH (or make CUDA_PATH=/where/it/is)"
fi

# ---- the tools some labs use: make test needs python3; the debugging and profiling labs the others
if command -v python3 >/dev/null 2>&1; then ok "python3 ($(python3 --version 2>&1))"
else bad "python3 not found (make test checks device_query's JSON with it)" "install python3 (apt-get install python3)"; fi
for tool in compute-sanitizer ncu cuda-gdb; do
    path=$(command -v $tool 2>/dev/null || { [ -x "$CUDA_PATH/bin/$tool" ] && echo "$CUDA_PATH/bin/$tool"; })
    case $tool in
        compute-sanitizer) use="make sanitize and ch06's debugging lab"; pkg=cuda-sanitizer ;;
        ncu) use="make profile (Nsight Compute)"; pkg=cuda-nsight-compute ;;
        cuda-gdb) use="make debug and ch06's cuda-gdb walkthrough"; pkg=cuda-gdb ;;
    esac
    if [ -n "$path" ]; then ok "$tool ($path)"
    else
        # PATH advice only where the toolkit's bin is not on PATH already: then the tool is missing
        case ":$PATH:" in *":$CUDA_PATH/bin:"* | *":$CUDA_PATH/bin/:"*) where="" ;; *) where=", or put $CUDA_PATH/bin on PATH" ;; esac
        opt "$tool not found: only $use use it" "install the toolkit's $pkg package (Debian/Ubuntu: $pkg-XX-Y for your CUDA XX.Y)$where"
    fi
done

# ---- CUDA libraries
libdir=""
for d in "$CUDA_PATH/lib64" "$CUDA_PATH/lib" "$CUDA_PATH"/targets/*/lib; do
    [ -d "$d" ] && [ -z "$libdir" ] && ls "$d"/libcudart* >/dev/null 2>&1 && libdir=$d
done
for lib in cudart cublas cufft curand cusolver nvrtc; do
    found=$(ls "$libdir"/lib$lib.so* "$libdir"/lib${lib}_static.a 2>/dev/null | head -n 1)
    if [ -n "$libdir" ] && [ -n "$found" ]; then
        ok "lib$lib ($libdir)"
    else
        bad "lib$lib not found under $CUDA_PATH" "install the full CUDA toolkit (it ships cuBLAS, cuFFT, cuRAND, cuSOLVER and NVRTC), or set CUDA_PATH"
    fi
done
# Thrust and CUB are headers (CUDA 13 keeps them under include/cccl, which nvcc searches itself)
thrust_dir=""
for d in "$CUDA_PATH/include/cccl/thrust" "$CUDA_PATH/include/thrust"; do
    [ -z "$thrust_dir" ] && [ -f "$d/sort.h" ] && thrust_dir=$d
done
if [ -n "$thrust_dir" ]; then ok "Thrust and CUB headers ($(dirname "$thrust_dir"))"
else bad "Thrust headers not found under $CUDA_PATH/include" "install the full CUDA toolkit (Thrust and CUB come with it), or set CUDA_PATH"; fi

# ---- WSL
if grep -qi microsoft /proc/version 2>/dev/null; then
    ok "WSL detected"
    if [ -e /usr/lib/wsl/lib/libcuda.so.1 ] || [ -e /usr/lib/wsl/lib/libcuda.so ]; then
        ok "WSL's libcuda is in /usr/lib/wsl/lib"
        case ":${LD_LIBRARY_PATH:-}:" in
            *:/usr/lib/wsl/lib:*) ;;
            *) note "if programs say 'no NVIDIA GPU/driver found': export LD_LIBRARY_PATH=/usr/lib/wsl/lib:\$LD_LIBRARY_PATH" ;;
        esac
    else
        bad "WSL without /usr/lib/wsl/lib/libcuda.so" \
            "install the NVIDIA driver on Windows (not inside WSL) and update WSL (wsl --update); never install a Linux driver inside WSL"
    fi
fi

# ---- driver and GPUs
driver_cuda=""
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
    driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)
    driver_cuda=$(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9][0-9.]*\).*/\1/p' | head -n 1)
    ok "NVIDIA driver $driver, supports CUDA up to ${driver_cuda:-?}"
    if [ -n "$driver_cuda" ] && [ -n "$toolkit_version" ]; then
        newer=$(printf '%s\n%s\n' "$driver_cuda" "$toolkit_version" | sort -V | tail -n 1)
        if [ "$newer" != "$driver_cuda" ] && [ "$driver_cuda" != "$toolkit_version" ]; then
            dmaj=${driver_cuda%%.*}; tmaj=${toolkit_version%%.*}
            if [ "$dmaj" -lt "$tmaj" ]; then
                bad "the driver supports CUDA $driver_cuda but the toolkit is $toolkit_version" \
                    "update the NVIDIA driver to one that supports CUDA $toolkit_version (programs would exit 77: insufficient driver)"
            else
                ok "toolkit $toolkit_version runs on this driver (same major version, minor-version compatibility)"
            fi
        else
            ok "toolkit $toolkit_version <= driver's CUDA $driver_cuda"
        fi
    fi
    i=0
    while IFS=, read -r name cap; do
        sm=$(echo "$cap" | tr -d ' .')
        if [ "${sm:-0}" -ge "$OLDEST_SM" ] 2>/dev/null; then
            ok "GPU $i: $name, compute capability ${cap# } (sm_$sm)"
        else
            bad "GPU $i: $name is sm_$sm, older than the oldest the lab book supports (sm_$OLDEST_SM: T4, RTX 20xx, GTX 16xx)" \
                "use a GPU of compute capability 7.5 or newer (a free cloud notebook's T4 will do)"
        fi
        i=$((i + 1))
    done < <(nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader)
else
    bad "no NVIDIA driver answers (nvidia-smi missing or failing)" \
        "install the NVIDIA driver for your GPU (Linux: your distribution's nvidia-driver package or NVIDIA's installer; WSL: the Windows driver), then reboot"
fi
arch=$(make -s --no-print-directory -C ch01_setup print-arch 2>/dev/null)
ok "the build targets ARCH=${arch:-?} (override: make ARCH=sm_XX)"

# ---- a tiny kernel, compiled and run
if [ -n "$NVCC" ] && [ -n "$arch" ]; then
    tmp=$(mktemp -d)
    cat >"$tmp/tiny.cu" <<'EOF'
#include <cstdio>
__global__ void add_one(int *x) { x[threadIdx.x] += 1; }
int main()
{
    int h[32], *d;
    for (int i = 0; i < 32; i++) h[i] = i;
    cudaError_t e = cudaMalloc(&d, sizeof h);
    if (e == cudaSuccess) e = cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) { add_one<<<1, 32>>>(d); e = cudaGetLastError(); }
    if (e == cudaSuccess) e = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) { printf("%s: %s\n", cudaGetErrorName(e), cudaGetErrorString(e)); return 1; }
    for (int i = 0; i < 32; i++) if (h[i] != i + 1) { printf("wrong result at %d\n", i); return 1; }
    printf("kernel ran\n");
    return 0;
}
EOF
    n=${arch#sm_}
    if "$NVCC" -gencode "arch=compute_$n,code=[sm_$n,compute_$n]" "$tmp/tiny.cu" -o "$tmp/tiny" >"$tmp/log" 2>&1; then
        ok "nvcc compiled a kernel for $arch"
        if out=$("$tmp/tiny" 2>&1); then
            ok "the kernel ran on the GPU and gave the right answer"
        else
            case $out in
                *InsufficientDriver*|*NoDevice*|*StubLibrary*)
                    bad "the test kernel could not run: $out" "a GPU and a driver new enough for this toolkit are needed (see the driver line above)" ;;
                *NoKernelImage*|*InvalidDeviceFunction*)
                    bad "the test kernel could not run: $out" "the GPU is not $arch: rebuild with make ARCH=sm_XX for your GPU's compute capability" ;;
                *)
                    bad "the test kernel failed: $out" "read the message above; run make env again after fixing the driver" ;;
            esac
        fi
    else
        bad "nvcc could not compile a kernel: $(tail -n 1 "$tmp/log")" \
            "check the toolkit install; a host compiler nvcc supports must be installed (gcc)"
    fi
    rm -rf "$tmp"
fi

echo
if [ ${#problems[@]} -eq 0 ]; then
    echo "ready: make && make test"
    exit 0
fi
echo "not ready (${#problems[@]} problem(s)):"
printf '  - %s\n' "${problems[@]}"
echo "other messages and their causes: README.md, 'Troubleshooting'"
exit 1
