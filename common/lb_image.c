/* lb_image.c - the picture helpers declared in labbook.h: a PNG writer that needs nothing
 * beyond libc (stored, uncompressed deflate) and a binary PGM reader with one-line errors. */
#define _POSIX_C_SOURCE 200809L
#include "labbook.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

/* ================================================================ PNG writer */

/* A PNG is a signature and chunks (length, type, data, CRC-32). The pixels go in IDAT as a
 * zlib stream; we use deflate's "stored" blocks (no compression), which any decoder reads. */

static uint32_t crc_table[256];

static void crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

static uint32_t crc_update(uint32_t crc, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) crc = crc_table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return crc;
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static int write_chunk(FILE *f, const char *type, const unsigned char *data, uint32_t len)
{
    unsigned char hdr[8];
    put_be32(hdr, len);
    memcpy(hdr + 4, type, 4);
    uint32_t crc = crc_update(0xFFFFFFFFu, hdr + 4, 4);
    crc = crc_update(crc, data, len) ^ 0xFFFFFFFFu;
    unsigned char tail[4];
    put_be32(tail, crc);
    if (fwrite(hdr, 1, 8, f) != 8) return -1;
    if (len && fwrite(data, 1, len, f) != len) return -1;
    return fwrite(tail, 1, 4, f) == 4 ? 0 : -1;
}

/* The zlib stream is collected in a buffer and flushed as one IDAT chunk when it fills. */
#define PNG_IDAT_BYTES (1u << 20)
typedef struct {
    FILE *f;
    unsigned char *buf;
    uint32_t len;
    int err;
} idat_writer;

static void idat_put(idat_writer *w, const unsigned char *p, size_t n)
{
    while (n && !w->err) {
        size_t room = PNG_IDAT_BYTES - w->len, k = n < room ? n : room;
        memcpy(w->buf + w->len, p, k);
        w->len += (uint32_t)k;
        p += k;
        n -= k;
        if (w->len == PNG_IDAT_BYTES) {
            if (write_chunk(w->f, "IDAT", w->buf, w->len)) w->err = 1;
            w->len = 0;
        }
    }
}

/* Adler-32 sums; the modulo is taken every 5552 bytes, the most that cannot overflow 32 bits */
static void adler_update(uint32_t *a1, uint32_t *a2, const unsigned char *p, size_t n)
{
    while (n) {
        size_t k = n < 5552 ? n : 5552;
        for (size_t i = 0; i < k; i++) {
            *a1 += p[i];
            *a2 += *a1;
        }
        *a1 %= 65521u;
        *a2 %= 65521u;
        p += k;
        n -= k;
    }
}

int lb_write_png(const char *path, int width, int height, int channels, const unsigned char *pixels,
                 const unsigned char *palette)
{
    if (width <= 0 || height <= 0 || (channels != 1 && channels != 3) || (palette && channels != 1)) {
        errno = EINVAL;
        return -1;
    }
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    crc_init();
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    unsigned char ihdr[13];
    put_be32(ihdr, (uint32_t)width);
    put_be32(ihdr + 4, (uint32_t)height);
    ihdr[8] = 8;                                     /* bits per sample */
    ihdr[9] = palette ? 3 : (channels == 3 ? 2 : 0); /* indexed, RGB or grey */
    ihdr[10] = ihdr[11] = ihdr[12] = 0;              /* deflate, no filter set, no interlace */
    int err = fwrite(signature, 1, 8, f) != 8 || write_chunk(f, "IHDR", ihdr, 13);
    if (!err && palette) err = write_chunk(f, "PLTE", palette, 256 * 3);

    idat_writer w = {f, (unsigned char *)malloc(PNG_IDAT_BYTES), 0, err};
    if (!w.buf) w.err = 1;
    /* raw data: each row is a filter-type byte (0 = none) then the row's bytes */
    size_t row = (size_t)width * (size_t)channels, raw_total = (size_t)height * (row + 1);
    size_t raw_done = 0, block_left = 0;
    uint32_t a1 = 1, a2 = 0; /* Adler-32 of the raw data */
    const unsigned char zlib_header[2] = {0x78, 0x01};
    idat_put(&w, zlib_header, 2);
    for (int y = 0; y < height && !w.err; y++) {
        const unsigned char zero = 0;
        const unsigned char *src[2] = {&zero, pixels + (size_t)y * row};
        size_t len[2] = {1, row};
        for (int part = 0; part < 2; part++) {
            const unsigned char *p = src[part];
            size_t n = len[part];
            while (n) {
                if (block_left == 0) { /* start a stored block of up to 65535 bytes */
                    size_t left = raw_total - raw_done;
                    block_left = left < 65535 ? left : 65535;
                    unsigned char bh[5] = {(unsigned char)(left == block_left), 0, 0, 0, 0};
                    bh[1] = (unsigned char)(block_left & 0xFF);
                    bh[2] = (unsigned char)(block_left >> 8);
                    bh[3] = (unsigned char)(~block_left & 0xFF);
                    bh[4] = (unsigned char)((~block_left >> 8) & 0xFF);
                    idat_put(&w, bh, 5);
                }
                size_t k = n < block_left ? n : block_left;
                idat_put(&w, p, k);
                adler_update(&a1, &a2, p, k);
                p += k;
                n -= k;
                block_left -= k;
                raw_done += k;
            }
        }
    }
    unsigned char adler[4];
    put_be32(adler, (a2 << 16) | a1);
    idat_put(&w, adler, 4);
    if (!w.err && w.len && write_chunk(f, "IDAT", w.buf, w.len)) w.err = 1;
    if (!w.err && write_chunk(f, "IEND", NULL, 0)) w.err = 1;
    free(w.buf);
    if (fclose(f) != 0) w.err = 1;
    if (w.err && !errno) errno = EIO;
    return w.err ? -1 : 0;
}

/* ---------------------------------------------------------------- PGM reader */

/* The next header number of a PGM: skip whitespace and '#' comments, read digits. */
static int pgm_number(FILE *f, long *out)
{
    int c = fgetc(f);
    for (;;) {
        while (c != EOF && isspace(c)) c = fgetc(f);
        if (c != '#') break;
        while (c != EOF && c != '\n') c = fgetc(f);
    }
    if (c == EOF || !isdigit(c)) return -1;
    long v = 0;
    while (c != EOF && isdigit(c)) {
        if (v > 100000000) return -1;
        v = v * 10 + (c - '0');
        c = fgetc(f);
    }
    if (c == EOF || !isspace(c)) return -1; /* exactly one whitespace byte ends the header */
    *out = v;
    return 0;
}

unsigned char *lb_read_pgm(const char *path, int *width, int *height, char *err, size_t err_len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_len, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    unsigned char *px = NULL;
    char magic[2];
    long w, h, maxval;
    if (fread(magic, 1, 2, f) != 2 || magic[0] != 'P' || magic[1] != '5') {
        snprintf(err, err_len, "%s: not a binary PGM (the file must start with P5)", path);
    } else if (pgm_number(f, &w) || pgm_number(f, &h) || pgm_number(f, &maxval)) {
        snprintf(err, err_len, "%s: malformed PGM header (expected P5, width, height, maxval)", path);
    } else if (w < 1 || h < 1 || w > 65536 || h > 65536) {
        snprintf(err, err_len, "%s: size %ldx%ld (each side must be 1..65536)", path, w, h);
    } else if (maxval < 1 || maxval > 255) {
        snprintf(err, err_len, "%s: maxval %ld: only 8-bit PGM (maxval 1..255) is supported", path, maxval);
    } else if (!(px = malloc((size_t)w * (size_t)h))) {
        snprintf(err, err_len, "%s: out of memory for %ldx%ld pixels", path, w, h);
    } else {
        size_t got = fread(px, 1, (size_t)w * (size_t)h, f);
        if (got != (size_t)w * (size_t)h) {
            snprintf(err, err_len, "%s: truncated: %zu of %zu pixel bytes", path, got, (size_t)w * (size_t)h);
            free(px);
            px = NULL;
        } else {
            *width = (int)w;
            *height = (int)h;
        }
    }
    fclose(f);
    return px;
}
