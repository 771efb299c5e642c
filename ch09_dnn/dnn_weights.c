/* dnn_weights.c - ch09's weights file (see dnn_net.h): the shape, the z-score, the class names
 * and the parameters in one file, and the --layers text. */
#define _POSIX_C_SOURCE 200809L
#include "dnn_net.h"

#include <errno.h>
#include <string.h>

/* ================================================================ save and load */

/* File layout (little-endian, as written by this host), version 2:
 *   8 bytes   "LBDNN\0\0\2"
 *   uint32    number of sizes (weight layers + 1), then uint32 activation (0 ReLU, 1 sigmoid)
 *   uint32    the sizes, features first, classes last
 *   float32   features means, then features standard deviations (the z-score to apply)
 *   for each class: uint32 length, then that many bytes of its name (no terminating 0)
 *   float32   the parameters: for each layer W (in x out, row-major), then b (out)
 * So the file alone is enough to classify new rows (--load w.bin --predict rows.csv). */
static const char MAGIC[8] = {'L', 'B', 'D', 'N', 'N', 0, 0, 2};
#define DNN_MAX_NAME 255 /* bytes of one class name in the file */

static int write_names(FILE *f, char *const *names, int n)
{
    for (int c = 0; c < n; c++) {
        size_t len = strlen(names[c]);
        uint32_t l = (uint32_t)(len > DNN_MAX_NAME ? DNN_MAX_NAME : len);
        if (fwrite(&l, 4, 1, f) != 1 || fwrite(names[c], 1, l, f) != l) return -1;
    }
    return 0;
}

/* n names into a malloc'd array of malloc'd strings; NULL if the file ends early or a length is bad */
static char **read_names(FILE *f, int n)
{
    char **names = calloc((size_t)n, sizeof(char *));
    for (int c = 0; names && c < n; c++) {
        uint32_t l;
        if (fread(&l, 4, 1, f) != 1 || l < 1 || l > DNN_MAX_NAME || !(names[c] = calloc(l + 1, 1)) ||
            fread(names[c], 1, l, f) != l) {
            free_names(names, n);
            return NULL;
        }
    }
    return names;
}

void free_names(char **names, int n)
{
    if (!names) return;
    for (int c = 0; c < n; c++) free(names[c]);
    free(names);
}

int save_weights(const char *path, const network *net, const float *mean, const float *sd, char *const *class_names,
                 char *err, size_t len)
{
    float *p = lb_host_alloc(sizeof(float) * net->n_params, "parameters");
    CUDA_CHECK(cudaMemcpy(p, net->d_params, sizeof(float) * net->n_params, cudaMemcpyDeviceToHost));
    FILE *f = fopen(path, "wb");
    int ok = f != NULL;
    if (ok) {
        uint32_t hdr[2 + DNN_MAX_LAYERS + 1] = {(uint32_t)net->n_layers + 1, (uint32_t)net->act};
        for (int l = 0; l <= net->n_layers; l++) hdr[2 + l] = (uint32_t)net->size[l];
        ok = fwrite(MAGIC, 1, 8, f) == 8 && fwrite(hdr, 4, (size_t)net->n_layers + 3, f) == (size_t)net->n_layers + 3 &&
             fwrite(mean, 4, (size_t)net->size[0], f) == (size_t)net->size[0] &&
             fwrite(sd, 4, (size_t)net->size[0], f) == (size_t)net->size[0] &&
             write_names(f, class_names, net->size[net->n_layers]) == 0 &&
             fwrite(p, 4, net->n_params, f) == net->n_params;
        ok = (fclose(f) == 0) && ok;
    }
    if (!ok) snprintf(err, len, "%s: cannot write: %s", path, strerror(errno));
    free(p);
    return ok ? 0 : -1;
}

/* Read a weights file: shape into net (sizes, act), normalization, class names, parameters
 * (host, malloc'd). */
float *load_weights(const char *path, network *net, float **mean, float **sd, char ***class_names, char *err,
                    size_t len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, len, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    char magic[8];
    uint32_t n_sizes = 0, act = 0, sizes[DNN_MAX_LAYERS + 1];
    int n_classes = 0;
    float *p = NULL;
    *mean = *sd = NULL;
    *class_names = NULL;
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, MAGIC, 7)) {
        snprintf(err, len, "%s: not a weights file of this program (bad magic number)", path);
    } else if (magic[7] != MAGIC[7]) {
        snprintf(err, len, "%s: a weights file of version %d; this program reads version %d (train and --save again)",
                 path, magic[7], MAGIC[7]);
    } else if (fread(&n_sizes, 4, 1, f) != 1 || fread(&act, 4, 1, f) != 1 || n_sizes < 2 ||
               n_sizes > DNN_MAX_LAYERS + 1 || act > 1 || fread(sizes, 4, n_sizes, f) != n_sizes) {
        snprintf(err, len, "%s: bad header (layer count or activation out of range, or truncated)", path);
    } else {
        int bad = 0;
        for (uint32_t l = 0; l < n_sizes; l++) bad |= sizes[l] < 1 || sizes[l] > 65536;
        if (bad || sizes[n_sizes - 1] > DNN_MAX_CLASSES) {
            snprintf(err, len, "%s: bad header (a layer size out of range)", path);
        } else {
            net->n_layers = (int)n_sizes - 1;
            net->act = (int)act;
            for (uint32_t l = 0; l < n_sizes; l++) net->size[l] = (int)sizes[l];
            layout(net);
            n_classes = net->size[net->n_layers];
            *mean = malloc(sizeof(float) * sizes[0]);
            *sd = malloc(sizeof(float) * sizes[0]);
            p = malloc(sizeof(float) * net->n_params);
            if (!*mean || !*sd || !p || fread(*mean, 4, sizes[0], f) != sizes[0] ||
                fread(*sd, 4, sizes[0], f) != sizes[0] || !(*class_names = read_names(f, n_classes)) ||
                fread(p, 4, net->n_params, f) != net->n_params || fgetc(f) != EOF) {
                snprintf(err, len, "%s: size does not match its header (truncated or trailing bytes)", path);
                free(p);
                p = NULL;
            }
        }
    }
    fclose(f);
    if (!p) {
        free(*mean);
        free(*sd);
        free_names(*class_names, n_classes);
        *mean = *sd = NULL;
        *class_names = NULL;
    }
    return p;
}

/* ================================================================ shape */

/* "4,16,16,3" into net->size; returns the layer count or -1 */
int parse_layers(const char *s, network *net)
{
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 65536 || n > DNN_MAX_LAYERS) return -1;
        net->size[n++] = (int)v;
        if (*end == ',')
            p = end + 1;
        else if (*end == 0)
            p = end;
        else
            return -1;
    }
    return n >= 2 ? n - 1 : -1;
}

