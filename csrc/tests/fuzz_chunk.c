/* Mutation fuzzer for the chunk decoder.
 *
 * Seeds: the golden chunks in $NDPACK_VECTORS/chunks plus chunks made here
 * with every codec and filter.  Each iteration mutates a seed (bit flips,
 * interesting values in header fields, bstarts and stream sizes, truncation,
 * byte runs) and runs every decoding entry point on it.  A decoder bug shows
 * up as a crash or an ASan/UBSan report; the program itself only checks that
 * decoders either fail cleanly or return the size they promise.
 *
 *   fuzz_chunk [--iterations N] [--seed S]        (CI quick mode: 20000)
 *
 * Built with -DNDP_LIBFUZZER it instead exposes LLVMFuzzerTestOneInput for
 * libFuzzer (clang -fsanitize=fuzzer,address) for long runs.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ndpack.h"

/* An n-d layout for the chunk (C-Blosc2's n-d codecs and filters read one): blocks of
 * 16 rows when the items divide so (the seeds' layout), else 1-d, chunks of the blocks
 * side by side. */
static void set_layout(const ndp_chunk_info *ci) {
  ndp_nd nd;
  memset(&nd, 0, sizeof nd);
  int32_t ts = ci->typesize > 0 ? ci->typesize : 1;
  int64_t items = ci->blocksize / ts;
  if (items < 1 || ci->nblocks < 1) {
    ndp_nd_set(NULL, NULL);
    return;
  }
  if (items % 16 == 0 && items >= 64) {
    nd.ndim = 2;
    nd.blockshape[0] = 16;
    nd.blockshape[1] = items / 16;
  } else {
    nd.ndim = 1;
    nd.blockshape[0] = items;
  }
  for (int d = 0; d < nd.ndim; d++) nd.chunkshape[d] = nd.blockshape[d];
  nd.chunkshape[0] *= ci->nblocks;
  ndp_nd_set(&nd, NULL);
}

static void run_one(const uint8_t *data, size_t size) {
  if (size > (1u << 24)) return;
  ndp_chunk_info ci;
  ndp_error err = {0, {0}};
  if (ndp_chunk_parse(data, (int32_t)size, &ci, &err) != 0) return;
  if (ci.nbytes > (1 << 24)) return;   /* keep allocations small */
  set_layout(&ci);
  uint8_t *out = malloc((size_t)ci.nbytes + 1);
  int32_t r = ndp_decompress(data, (int32_t)size, out, ci.nbytes, 2, &err);
  if (r >= 0 && r != ci.nbytes) {
    fprintf(stderr, "decompress returned %d, header says %d\n", r, ci.nbytes);
    abort();
  }
  uint32_t crc = 0;
  int32_t r2 = ndp_decompress_crc(data, (int32_t)size, out, ci.nbytes, 2, &crc, &err);
  /* with 2 threads, which failing block reports first (hence the code) may differ */
  if ((r2 < 0) != (r < 0) || (r2 >= 0 && (r2 != r || crc != ndp_crc32c(0, data, size)))) {
    fprintf(stderr, "decompress_crc returned %d (crc %08x), decompress %d\n", r2, crc, r);
    abort();
  }
  if (ci.typesize > 0 && ci.nbytes / ci.typesize > 2) {
    int32_t n = ci.nbytes / ci.typesize;
    err.code = 0;
    ndp_getitem(data, (int32_t)size, n / 3, n / 3, out, ci.nbytes, &err);
  }
  if (ci.nblocks > 1 && (int64_t)ci.blocksize * 2 <= ci.nbytes) {
    int32_t blocks[2] = {ci.nblocks - 1, 0};
    err.code = 0;
    ndp_decompress_blocks(data, (int32_t)size, blocks, 2, out, ci.nbytes, 1, &err);
    int32_t needs[2] = {ci.blocksize / 3, 1};
    err.code = 0;
    ndp_decompress_block_prefixes(data, (int32_t)size, blocks, needs, 2, out, ci.nbytes, 1,
                                  &err);
  }
  /* a box read of three items, the chunk seen as a 1-D array's only chunk */
  if (ci.typesize > 0 && ci.blocksize >= ci.typesize && ci.blocksize % ci.typesize == 0 &&
      ci.nbytes % ci.blocksize == 0 && ci.nbytes / ci.typesize > 2) {
    int64_t n = ci.nbytes / ci.typesize, ch = n, bl = ci.blocksize / ci.typesize, g = 1;
    int64_t u[3] = {0, n / 2, n - 1}, nu = 3;
    const int64_t *units[1] = {u};
    ndp_box *box = NULL;
    err.code = 0;
    if (ndp_box_plan(1, &ch, &bl, &g, ci.typesize, units, &nu, NULL, NULL, 3, &box, &err) == NDP_OK &&
        box != NULL) {
      const void *ptrs[1] = {data};
      int32_t sizes[1] = {(int32_t)size};
      uint8_t *scratch = malloc((size_t)ndp_box_nslots(box) * (size_t)ci.blocksize);
      uint8_t three[3 * 255];
      if (scratch != NULL)
        ndp_box_read(box, ptrs, sizes, scratch, ndp_box_nslots(box) * ci.blocksize, three,
                     3 * ci.typesize, 1, &err);
      free(scratch);
      ndp_box_free(box);
    }
  }
  /* runs of items (sub-block reads) */
  if (ci.typesize > 0 && ci.blocksize > 0 && ci.nbytes / ci.typesize > 4) {
    int64_t per = ci.blocksize / ci.typesize > 0 ? ci.blocksize / ci.typesize : 1;
    int64_t starts[2] = {1, ((ci.nbytes / ci.typesize - 1) / per) * per};
    int32_t counts[2] = {1, 1};
    err.code = 0;
    ndp_getitems(data, (int32_t)size, starts, counts, 2, out, ci.nbytes, &err);
  }
  /* block checksums of hostile chunks: the count, the entries (the chunk's crc joined
   * from them equals its hash), the checks of them and of a lying entry, reading only
   * inside the chunk (ASan) */
  uint32_t *entry = NULL;
  int32_t nentry = ndp_block_sums(data, (int32_t)size, NULL, 0, NULL, &err);
  if (nentry > 0 && nentry < (1 << 20) && (entry = malloc(4 * (size_t)nentry)) != NULL) {
    uint32_t joined = 0;
    int32_t got = ndp_block_sums(data, (int32_t)size, entry, nentry, &joined, &err);
    if (got >= 0 && joined != ndp_crc32c(0, data, size)) {
      fprintf(stderr, "block_sums joined crc %08x, the chunk hashes to %08x\n", joined,
              ndp_crc32c(0, data, size));
      abort();
    }
    if (got == nentry) {
      int32_t all[2] = {0, nentry - 2};
      if (ndp_block_sums_check(data, (int32_t)size, all, 2, entry, nentry, 1, &err) != NDP_OK) {
        fprintf(stderr, "block_sums_check refused the chunk's own entries: %s\n", err.msg);
        abort();
      }
      entry[nentry - 1] ^= 1u;
      int32_t last[1] = {nentry - 2};
      if (ndp_block_sums_check(data, (int32_t)size, last, 1, entry, nentry, 1, &err) == NDP_OK) {
        fprintf(stderr, "block_sums_check accepted a changed entry\n");
        abort();
      }
      entry[nentry - 1] ^= 1u;
    }
  }
  /* some blocks read from a file: the packed chunk must decode cleanly or fail */
  static FILE *f = NULL;
  if (f == NULL) f = tmpfile();
  if (f != NULL && ci.nblocks > 0 && ci.nblocks < (1 << 16)) {
    int fd = fileno(f);
    if (ftruncate(fd, 0) == 0 && pwrite(fd, data, size, 3) == (ssize_t)size) {
      int32_t want[2] = {ci.nblocks - 1, ci.nblocks / 2};
      int64_t need = 0, cap = (int64_t)size + 64;
      uint8_t *packed = malloc((size_t)cap);
      err.code = 0;
      int64_t got = ndp_fd_read_blocks(fd, 3, ci.nblocks, 0, want, 2, packed, cap, &need, &err);
      if (entry != NULL && nentry == ci.nblocks + 1) {      /* the same, checked */
        uint8_t *packed2 = malloc((size_t)cap);
        int64_t need2 = 0;
        err.code = 0;
        int64_t got2 = ndp_fd_read_blocks_checked(fd, 3, ci.nblocks, 0, want, 2, packed2, cap,
                                                  &need2, entry, nentry, &err);
        if (got2 > 0 && (got2 != got || memcmp(packed, packed2, (size_t)got) != 0)) {
          fprintf(stderr, "fd_read_blocks_checked packed another chunk\n");
          abort();
        }
        free(packed2);
      }
      if (got > cap) {
        fprintf(stderr, "fd_read_blocks wrote %lld bytes into %lld\n", (long long)got,
                (long long)cap);
        abort();
      }
      if (got > 0 && (int64_t)ci.blocksize * 2 <= ci.nbytes) {
        uint8_t *exact = malloc((size_t)got);    /* ASan: no read past the packed chunk */
        memcpy(exact, packed, (size_t)got);
        err.code = 0;
        ndp_decompress_blocks(exact, (int32_t)got, want, 2, out, ci.nbytes, 1, &err);
        free(exact);
      }
      free(packed);
    }
  }
  /* the fused decode + sum: the chunk as a 1-D array of doubles (or bytes) */
  if (ci.blocksize > 0 && ci.nbytes % ci.blocksize == 0) {
    int ts = ci.typesize == 8 ? 8 : 1;
    ndp_reduce_spec s;
    memset(&s, 0, sizeof s);
    s.ndim = 2;
    s.in_type = ts == 8 ? NDP_T_F64 : NDP_T_U8;
    s.acc_float = 1;
    s.reduced = 1u << 1;
    s.blockshape[0] = 1;
    s.blockshape[1] = ci.blocksize / ts;
    s.chunkshape[0] = s.valid[0] = ci.nbytes / ci.blocksize;
    s.chunkshape[1] = s.valid[1] = ci.blocksize / ts;
    s.ostride[0] = 1;
    s.out_len = s.chunkshape[0];
    if (s.blockshape[1] > 0 && s.out_len > 0 && (size_t)s.out_len * 8 <= (size_t)ci.nbytes + 1) {
      err.code = 0;
      ndp_sum_chunk(data, (int32_t)size, &s, out, &err);
    }
  }
  free(out);
  free(entry);
}

#ifdef NDP_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  run_one(data, size);
  return 0;
}
#else

typedef struct { uint8_t *p; size_t n; } seed_t;
static seed_t seeds[512];
static int nseeds = 0;
static uint64_t state = 88172645463325252ull;
static uint64_t rnd(void) {
  state ^= state << 13; state ^= state >> 7; state ^= state << 17;
  return state;
}

static void add_seed(const uint8_t *p, size_t n) {
  if (nseeds >= 512 || n == 0) return;
  seeds[nseeds].p = malloc(n);
  memcpy(seeds[nseeds].p, p, n);
  seeds[nseeds].n = n;
  nseeds++;
}

static void load_vectors(const char *dir) {
  char path[1024];
  snprintf(path, sizeof path, "%s/chunks", dir);
  DIR *d = opendir(path);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!strstr(e->d_name, ".cdata")) continue;
    snprintf(path, sizeof path, "%s/chunks/%s", dir, e->d_name);
    FILE *f = fopen(path, "rb");
    if (!f) continue;
    uint8_t buf[65536];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    add_seed(buf, n);
  }
  closedir(d);
}

static void make_seeds(void) {
  static const int codecs[] = {NDP_BLOSCLZ, NDP_LZ4, NDP_LZ4HC, NDP_ZLIB, NDP_ZSTD};
  static const uint8_t filt[] = {0, NDP_SHUFFLE, NDP_BITSHUFFLE, NDP_DELTA, NDP_BYTEDELTA};
  uint8_t src[6000], dst[6100];
  for (int i = 0; i < 6000; i++) src[i] = (uint8_t)(i % 97 < 60 ? i / 5 : i * 7);
  for (int c = 0; c < 5; c++)
    for (int f = 0; f < 5; f++) {
      ndp_cparams cp = ndp_cparams_default();
      ndp_error err = {0, {0}};
      cp.compcode = codecs[c];
      cp.typesize = 4;
      cp.blocksize = 1024;
      cp.filters[0] = filt[f];
      if (filt[f] == NDP_BYTEDELTA) cp.filters[5] = NDP_SHUFFLE;
      int32_t n = ndp_compress(&cp, src, 6000, dst, sizeof dst, &err);
      if (n > 0) add_seed(dst, (size_t)n);
    }
  /* C-Blosc2's n-d codecs and filters, blocks of 16 x 16 items (set_layout's), smooth
   * doubles or bytes; ZFP only when built with libzfp */
  static double smooth[16 * 16 * 3];
  static uint8_t bytes[16 * 64 * 3], out[16 * 16 * 3 * 8 + 64];
  for (int i = 0; i < 16 * 16 * 3; i++) smooth[i] = (i % 16) * 0.25 + (i / 16) * 0.125 + (i % 7) * 1e-3;
  for (int i = 0; i < 16 * 64 * 3; i++) bytes[i] = (uint8_t)((i % 64) / 8 + (i / 256) * 3 + (i % 29 == 0) * 77);
  ndp_nd nd;
  memset(&nd, 0, sizeof nd);
  nd.ndim = 2;
  nd.blockshape[0] = 16;
  nd.chunkshape[0] = 48;
  static const int ndc[][4] = {  /* codec, meta, filter, filter meta */
    {NDP_ZFP_ACC, 253, 0, 0}, {NDP_ZFP_PREC, 20, 0, 0}, {NDP_ZFP_RATE, 30, 0, 0},
    {NDP_NDLZ, 4, 0, 0}, {NDP_NDLZ, 8, 0, 0}, {NDP_LZ4, 0, NDP_NDCELL, 4},
    {NDP_LZ4, 0, NDP_NDMEAN, 4}, {NDP_ZSTD, 0, NDP_NDCELL, 3}};
  for (size_t k = 0; k < sizeof ndc / sizeof ndc[0]; k++) {
    int is_bytes = ndc[k][0] == NDP_NDLZ;
    nd.blockshape[1] = nd.chunkshape[1] = is_bytes ? 64 : 16;
    ndp_nd_set(&nd, NULL);
    ndp_cparams cp = ndp_cparams_default();
    ndp_error err = {0, {0}};
    cp.compcode = ndc[k][0];
    cp.compcode_meta = ndc[k][1];
    cp.typesize = is_bytes ? 1 : 8;
    cp.blocksize = is_bytes ? 16 * 64 : 16 * 16 * 8;
    cp.filters[5] = 0;
    cp.filters[0] = (uint8_t)ndc[k][2];
    cp.filters_meta[0] = (uint8_t)ndc[k][3];
    int32_t n = ndp_compress(&cp, is_bytes ? (const void *)bytes : (const void *)smooth,
                             3 * cp.blocksize, out, sizeof out, &err);
    if (n > 0) add_seed(out, (size_t)n);
    else if (ndc[k][0] < NDP_ZFP_ACC || ndc[k][0] > NDP_ZFP_RATE || ndp_codec_available(ndc[k][0]))
      fprintf(stderr, "n-d seed %zu: %s\n", k, err.msg);
  }
  ndp_nd_set(NULL, NULL);
}

static const int32_t interesting[] = {0, 1, -1, 2, 4, 7, 8, 16, 31, 32, 33, 255, 256, -255,
                                      -256, 4096, 65535, 0x7FFFFFFF, (int32_t)0x80000000,
                                      536866816, 536866817};

static size_t mutate(uint8_t *p, size_t n, size_t cap) {
  int k = 1 + (int)(rnd() % 4);
  for (int m = 0; m < k; m++) {
    switch (rnd() % 7) {
      case 0: if (n) p[rnd() % n] ^= (uint8_t)(1u << (rnd() % 8)); break;
      case 1: if (n) p[rnd() % n] = (uint8_t)rnd(); break;
      case 2: {  /* a header field */
        size_t off = (rnd() % 8) * 4;
        if (off + 4 <= n) {
          int32_t v = interesting[rnd() % (sizeof interesting / sizeof *interesting)];
          memcpy(p + off, &v, 4);
        }
        break;
      }
      case 3: {  /* a bstart or stream size somewhere after the header */
        if (n > 40) {
          size_t off = 32 + rnd() % (n - 36);
          int32_t v = interesting[rnd() % (sizeof interesting / sizeof *interesting)];
          memcpy(p + off, &v, 4);
        }
        break;
      }
      case 4: if (n) n = rnd() % n; break;   /* truncate */
      case 5: if (n > 3) p[rnd() % 4] = (uint8_t)rnd(); break;  /* version/flags/typesize */
      default: {  /* extend with garbage */
        size_t add = rnd() % 64;
        if (n + add > cap) add = cap - n;
        for (size_t i = 0; i < add; i++) p[n + i] = (uint8_t)rnd();
        n += add;
      }
    }
  }
  return n;
}

int main(int argc, char **argv) {
  long iterations = 20000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--iterations") == 0) iterations = atol(argv[i + 1]);
    else if (strcmp(argv[i], "--seed") == 0) state = (uint64_t)atoll(argv[i + 1]) | 1;
  }
  const char *dir = getenv("NDPACK_VECTORS");
  load_vectors(dir ? dir : "tests/data/vectors");
  make_seeds();
  if (nseeds == 0) { printf("no seeds\n"); return 1; }
  size_t cap = 70000;
  uint8_t *buf = malloc(cap);
  for (long it = 0; it < iterations; it++) {
    seed_t *s = &seeds[rnd() % (uint64_t)nseeds];
    size_t n = s->n < cap ? s->n : cap;
    memcpy(buf, s->p, n);
    n = mutate(buf, n, cap);
    /* Exact-size heap copy so ASan catches any read past the end. */
    uint8_t *exact = malloc(n ? n : 1);
    memcpy(exact, buf, n);
    run_one(exact, n);
    free(exact);
  }
  free(buf);
  for (int i = 0; i < nseeds; i++) free(seeds[i].p);
  printf("fuzz: %ld mutated inputs from %d seeds, no crash\n", iterations, nseeds);
  printf("%ld passed, 0 failed\n", iterations);
  return 0;
}
#endif
