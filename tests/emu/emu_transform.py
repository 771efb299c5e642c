#!/usr/bin/env python3
"""emu_transform.py KERNELS.cu OUT.cpp LB_TENSOR_CORE.cuh - a chapter's kernels file as C++ for emu_cuda.h.

What changes (everything else is compiled as written):
  - the CUDA headers go; emu_cuda.h comes first; where the file uses lb_tensor_core.cuh, its
    wgmma descriptor builders (plain arithmetic, the code under test) are pasted in;
  - each function that holds inline PTX gets the emulation's body instead (RULES below, by its
    signature); a rule that finds nothing, or PTX left anywhere, stops the transform: the
    kernels changed, and this file must follow;
  - `extern __shared__ T name[];` becomes a pointer to the block's dynamic shared memory, and
    `__shared__` becomes `static` (one block runs at a time);
  - kernel<<<grid, block, smem>>>(args); becomes emu_launch(grid, block, smem, [=] { kernel(args); });
"""
import re
import sys

HEADERS = ['#include "labbook.h"', '#include "lb_tensor_core.cuh"', '#include <cuda.h>', '#include <cuda_bf16.h>',
           '#include <mma.h>']

# signature (as written in the kernels file) -> the body the emulation gives it; None deletes
# the function (emu_cuda.h has it)
RULES = {
    'attention_kernels.cu': {
        '__device__ __forceinline__ float fast_exp2(float x)': 'return exp2f(x);',
        '__device__ __forceinline__ void wgmma_qk(float d[64], uint64_t dq, uint64_t dk, int accumulate)':
            'emu_wgmma(d, 128, dq, nullptr, dk, 0, accumulate);',
        'template <> __device__ __forceinline__ void wgmma_pv<128>(float *d, const uint32_t a[4], uint64_t dv)':
            'emu_wgmma(d, 128, 0, a, dv, 1, 1);',
        'template <> __device__ __forceinline__ void wgmma_pv<64>(float *d, const uint32_t a[4], uint64_t dv)':
            'emu_wgmma(d, 64, 0, a, dv, 1, 1);',
        'template <int N> __device__ __forceinline__ void settle(float *r)': '(void)r;',
    },
    'tensor_gemm_kernels.cu': {
        'template <> __device__ __forceinline__ void wgmma_256<__nv_bfloat16>(float d[128], uint64_t da, uint64_t db)':
            'emu_wgmma(d, 256, da, nullptr, db, 0, 1, 2);',
        'template <> __device__ __forceinline__ void wgmma_256<float>(float d[128], uint64_t da, uint64_t db)':
            'emu_wgmma(d, 256, da, nullptr, db, 0, 1, 4);',
    },
    'dnn_fused_kernels.cu': {
        '__device__ __forceinline__ unsigned to_tf32(float x)': 'return __float_as_uint(x); /* TF32: not emulated */',
        '__device__ __forceinline__ void mma_tf32(float *c0, float *c1, float *c2, float *c3, const unsigned *a,\n'
        '                                         const unsigned *b)':
            '(void)c0, (void)c1, (void)c2, (void)c3, (void)a, (void)b;\n'
            '    fprintf(stderr, "emulation: the TF32 tensor-core path is not emulated\\n");\n    abort();',
    },
    'matmul_kernels.cu': {
        '__device__ __forceinline__ void cp_async16(float *smem, const float *gmem, int src_bytes)': None,
        '__device__ __forceinline__ void cp_async4(float *smem, const float *gmem, int src_bytes)': None,
        '__device__ __forceinline__ void cp_async_commit()': None,
        'template <int N> __device__ __forceinline__ void cp_async_wait()': None,
    },
}
# text that becomes nothing: the macro of matmul's cp.async helpers (emu_cuda.h's replace them: a
# use left fails to compile), tensor_gemm's wgmma macro (its uses are replaced above)
DROP = {
    'dnn_fused_kernels.cu': [],
    'attention_kernels.cu': [],
    'matmul_kernels.cu': [r'#define MATMUL_CP_ASYNC\(\.\.\.\) asm volatile\(__VA_ARGS__\)'],
    'tensor_gemm_kernels.cu': [r'#define TG_WGMMA_256\(INSTR, TAIL\)(?:[^\n]*\\\n)*[^\n]*\n'],
}
# macros of the kernels file, defined as on an sm_90a build
DEFINES = {'attention_kernels.cu': ['ATT_SM80', 'ATT_SM90A', 'ATT_HOPPER'], 'matmul_kernels.cu': [],
           'dnn_fused_kernels.cu': [],
           'tensor_gemm_kernels.cu': ['TG_SM80', 'TG_SM90A', 'TG_HOPPER']}


def fail(why):
    sys.exit('emu_transform: ' + why)


def function_end(src, start):
    """the index just past the function that starts at `start` (its braces balanced)"""
    i = src.index('{', start)
    depth = 0
    while True:
        if src[i] == '{':
            depth += 1
        elif src[i] == '}':
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1


def replace_function(src, signature, body):
    start = src.find(signature)
    if start < 0:
        fail('no function "%s" (the kernels changed: update RULES)' % signature)
    end = function_end(src, start)
    return src[:start] + ('' if body is None else signature + '\n{\n    ' + body + '\n}') + src[end:]


def balanced(src, i, open_ch, close_ch, step):
    """from src[i] == open_ch (step 1) or close_ch (step -1), the index of its partner"""
    depth = 0
    while True:
        if src[i] == open_ch:
            depth += step
        elif src[i] == close_ch:
            depth -= step
        if depth == 0:
            return i
        i += step


def split_top_level(text):
    parts, depth, cur = [], 0, ''
    for ch in text:
        depth += ch in '([{'
        depth -= ch in ')]}'
        if ch == ',' and depth == 0:
            parts.append(cur.strip())
            cur = ''
        else:
            cur += ch
    return parts + [cur.strip()]


def rewrite_launches(src):
    while '<<<' in src:
        i = src.index('<<<')
        j = src.index('>>>', i)
        k = i  # the kernel: a name with template arguments, or a parenthesised expression
        while src[k - 1] in ' \n':
            k -= 1
        if src[k - 1] == ')':
            k = balanced(src, k - 1, '(', ')', -1)
        else:
            if src[k - 1] == '>':
                k = balanced(src, k - 1, '<', '>', -1)
            while src[k - 1].isalnum() or src[k - 1] in '_:':
                k -= 1
        kernel = src[k:i].strip()
        config = split_top_level(src[i + 3:j]) + ['0', '0']
        a = src.index('(', j)
        b = balanced(src, a, '(', ')', 1)
        end = src.index(';', b) + 1
        call = 'emu_launch(dim3(%s), dim3(%s), %s, [=] { %s(%s); });' % (config[0], config[1], config[2], kernel,
                                                                       src[a + 1:b])
        src = src[:k] + call + src[end:]
    return src


def main():
    kernels, out = sys.argv[1], sys.argv[2]
    name = kernels.split('/')[-1]
    if name not in RULES:
        fail('no rules for %s' % name)
    src = open(kernels).read()
    uses_tensor_core = '#include "lb_tensor_core.cuh"' in src
    for h in HEADERS:
        src = src.replace(h, '')
    for signature, body in RULES[name].items():
        src = replace_function(src, signature, body)
    for pattern in DROP[name]:
        src, found = re.subn(pattern, '', src)
        if not found:
            fail('nothing matches "%s" in %s (the kernels changed: update DROP)' % (pattern, name))
    src = re.sub(r'extern __shared__ (?:__align__\(\d+\) )?(\w+) (\w+)\[\];', r'\1 *\2 = (\1 *)emu_dynamic_smem();', src)
    src = src.replace('__shared__', 'static')
    src = rewrite_launches(src)
    code = re.sub(r'/\*.*?\*/|//[^\n]*', '', src, flags=re.S)
    if re.search(r'\basm\b', code):
        fail('inline PTX left in %s outside the rules: %s' % (name, re.search(r'.*\basm\b.*', code).group(0).strip()))
    prologue = '#include "emu_cuda.h"\n' + ''.join('#define %s 1\n' % d for d in DEFINES[name])
    if uses_tensor_core:
        header = open(sys.argv[3]).read()
        for builder in ['wgmma_desc', 'wgmma_desc_mn']:
            signature = '__device__ __forceinline__ uint64_t %s(' % builder
            start = header.find(signature)
            if start < 0:
                fail('no %s in lb_tensor_core.cuh' % builder)
            prologue += header[start:function_end(header, start)] + '\n'
    open(out, 'w').write(prologue + src)


if __name__ == '__main__':
    main()
