#!/usr/bin/env python3
"""emu_transform.py KERNELS.cu OUT.cpp - a chapter's kernels file as C++ for tests/emu.

The kernels file compiles as it is written (tests/Makefile: g++ -include emu_cuda.h, with the
twins of the hardware's headers in tests/emu/include found first). Two pieces of CUDA's syntax
have no C++ form, and only they change here:
  - `extern __shared__ T name[];` (the launch's dynamic shared memory) becomes a pointer to the
    emulated block's;
  - kernel<<<grid, block, smem>>>(args); becomes
    emu_launch(grid, block, smem, emu_bind([=](auto... a) { kernel(a...); }, args));
    the arguments evaluated and copied at the launch, as the GPU does: a launch recorded in a
    graph runs later, after the launcher's locals (a problem struct it points into) are gone.
Inline PTX belongs in common/lb_tensor_core.cuh, whose twin emulates it: any left in the kernels
file stops the transform.
"""
import re
import sys


def fail(why):
    sys.exit('emu_transform: ' + why)


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
        args = src[a + 1:b].strip()
        call = 'emu_launch(dim3(%s), dim3(%s), %s, emu_bind([=](auto... a) { %s(a...); }%s));' % (
            config[0], config[1], config[2], kernel, ', ' + args if args else '')
        src = src[:k] + call + '\n' * src[k:end].count('\n') + src[end:]  # the lines where they were
    return src


def main():
    kernels, out = sys.argv[1], sys.argv[2]
    src = open(kernels).read()
    code = re.sub(r'/\*.*?\*/|//[^\n]*', '', src, flags=re.S)
    if re.search(r'\basm\b', code):
        fail('inline PTX in %s: it belongs in common/lb_tensor_core.cuh, beside its emulated twin: %s' %
             (kernels, re.search(r'.*\basm\b.*', code).group(0).strip()))
    src = re.sub(r'extern __shared__ (?:__align__\(\d+\) )?(\w+) (\w+)\[\];', r'\1 *\2 = (\1 *)emu_dynamic_smem();', src)
    src = rewrite_launches(src)
    open(out, 'w').write('#line 1 "%s"\n' % kernels + src)


if __name__ == '__main__':
    main()
