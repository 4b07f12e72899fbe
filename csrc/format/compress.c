/* Chunk writer (FORMAT.md 1.8): filters, split streams, run/zero streams,
 * codec streams, memcpy fallback and the all-zeros collapse.  Blocks are
 * compressed in parallel in the process-wide pool; each finished block is
 * appended at an atomically reserved position, so bstarts may be out of order
 * when nthreads > 1 (the format allows it, readers parse each block's own
 * streams). */
#include <stdatomic.h>
#include <stdlib.h>

#include "chunk.h"

#include "../codecs/codecs.h"
#include "../codecs/ndcodecs.h"
#include "../common/tls.h"

typedef struct {
  const ndp_cparams *cp;
  const uint8_t *src;
  int32_t nbytes, blocksize, nblocks, typesize;
  int split;
  int sequential;             /* one thread: blocks go straight into dst, in order */
  const ndp_cdict *dict;      /* NULL unless use_dict */
  uint8_t filters[NDP_NFILTERS], meta[NDP_NFILTERS];
  uint8_t *dst;
  int32_t limit;              /* python-blosc2 destsize: nbytes + 32 */
  int32_t bstarts_pos;        /* where bstarts are written */
  atomic_int pos;             /* next free byte in dst */
  atomic_int overflow;        /* output would exceed `limit` */
  atomic_int all_zero;        /* every stream so far was a zero run */
  atomic_int failed;
  atomic_int noise_first, noise_mid; /* encoder in parts: the noise samples' verdicts */
  uint32_t *crcs;             /* encoder in parts: each block's crc32c as written, or NULL */
  ndp_nd nd;                  /* the caller's n-d layout (ndp_nd_set) */
  ndp_error err;
  pthread_mutex_t err_lock;
} cjob;

/* 1 if the n bytes at p are all equal (n >= 1). */
static int all_equal(const uint8_t *p, int32_t n) {
  return n <= 1 || (p[0] == p[n - 1] && memcmp(p, p + 1, (size_t)n - 1) == 0);
}

static void job_fail(cjob *job, int code, const char *what, int32_t block) {
  pthread_mutex_lock(&job->err_lock);
  if (!atomic_load(&job->failed)) {
    ndp_fail(&job->err, code, "%s (block %d)", what, (int)block);
    atomic_store(&job->failed, code);
  }
  pthread_mutex_unlock(&job->err_lock);
}

/* Encode the streams of one filtered block into out[0..cap); returns the
 * number of bytes or -1 when it does not fit in cap. */
static int32_t encode_streams(cjob *job, const uint8_t *fb, int32_t bsize, uint8_t *out,
                              int32_t cap, int *zero_block, int *errcode, ndp_error *cerr) {
  int nstreams = (job->split && bsize == job->blocksize) ? job->typesize : 1;
  int32_t neblock = bsize / nstreams;
  int32_t o = 0;
  *zero_block = 1;
  for (int s = 0; s < nstreams; s++) {
    const uint8_t *p = fb + (size_t)s * neblock;
    if (o + 4 > cap) return -1;
    if (all_equal(p, neblock)) {
      if (p[0] == 0) {
        ndp_wr32(out + o, 0);
        o += 4;
      } else {
        if (o + 5 > cap) return -1;
        ndp_wr32(out + o, -(int32_t)p[0]);
        out[o + 4] = 0x01;
        o += 5;
        *zero_block = 0;
      }
      continue;
    }
    *zero_block = 0;
    int32_t room = cap - o - 4;
    int32_t maxout = room < neblock ? room : neblock;
    int32_t c;
    if (ndp_codec_is_nd(job->cp->compcode))
      c = maxout <= 0 ? 0 : ndp_nd_encode(job->cp->compcode, job->cp->clevel,
                                          job->cp->compcode_meta, job->typesize, &job->nd, p,
                                          neblock, out + o + 4, maxout, cerr);
    else if (job->dict != NULL)
      c = ndp_codec_encode_dict(job->cp->compcode, job->cp->clevel, job->dict, p, neblock,
                                out + o + 4, maxout);
    else
      c = ndp_codec_encode(job->cp->compcode, job->cp->clevel, job->cp->compcode_meta, p,
                           neblock, out + o + 4, maxout);
    if (c < 0) {
      if (cerr->code == 0) ndp_fail(cerr, c, "codec %d failed", job->cp->compcode);
      *errcode = c;
      return -1;
    }
    if (c == 0 || c >= neblock) {  /* store raw */
      if (neblock > room) return -1;
      memcpy(out + o + 4, p, (size_t)neblock);
      c = neblock;
    }
    ndp_wr32(out + o, c);
    o += 4 + c;
  }
  return o;
}

/* Filter and encode block j, whose bytes are at `block` (in the chunk at `src`, or a
 * copy elsewhere when src is NULL: no DELTA then), and store it at the next free
 * position. */
static void compress_block_at(cjob *job, const uint8_t *src, const uint8_t *block, int32_t j) {
  if (atomic_load(&job->failed) || atomic_load(&job->overflow)) return;
  int32_t off = j * job->blocksize;
  int32_t bsize = job->nbytes - off < job->blocksize ? job->nbytes - off : job->blocksize;
  uint8_t *a = ndp_scratch(0, (size_t)job->blocksize);
  uint8_t *b = ndp_scratch(1, (size_t)job->blocksize);
  /* One thread writes straight into dst; several write into their own buffer
   * (worst case: 4 + 1 bytes per stream plus the bytes) and then reserve room. */
  int32_t wcap, at = 0;
  uint8_t *w;
  if (job->sequential) {
    at = atomic_load(&job->pos);
    wcap = job->limit - at;
    w = job->dst + at;
  } else {
    wcap = bsize + 5 * job->typesize + 8;
    w = ndp_scratch(2, (size_t)wcap);
  }
  if (a == NULL || b == NULL || w == NULL) {
    job_fail(job, NDP_ERR_MEMORY, "cannot allocate block buffers", j);
    return;
  }
  const uint8_t *fb;
  ndp_error ferr = {0, {0}};
  if (ndp_pipeline_forward(job->filters, job->meta, job->typesize, src, off, block, bsize,
                           a, b, &fb, &job->nd, &ferr) != NDP_OK) {
    job_fail(job, ferr.code, ferr.msg, j);
    return;
  }
  int zero_block, errcode = 0;
  ndp_error cerr = {0, {0}};
  int32_t len = encode_streams(job, fb, bsize, w, wcap, &zero_block, &errcode, &cerr);
  if (len < 0) {
    if (errcode) job_fail(job, errcode, cerr.msg, j);
    else atomic_store(&job->overflow, 1);
    return;
  }
  /* the verdict sample_is_noise would give on this block (cap never binds: a block's
   * streams take at most bsize + 5 * typesize bytes) */
  if (j == 0 || j == job->nblocks / 2)
    atomic_store(j == 0 ? &job->noise_first : &job->noise_mid, len >= bsize - bsize / 50);
  if (!zero_block) atomic_store(&job->all_zero, 0);
  /* hashed while in cache: the chunk's crc32c is joined from these at the end */
  if (job->crcs != NULL) job->crcs[j] = ndp_crc32c(0, w, (size_t)len);
  if (job->sequential) {
    atomic_store(&job->pos, at + len);
  } else {
    at = atomic_fetch_add(&job->pos, len);
    if ((int64_t)at + len > job->limit) {
      atomic_store(&job->overflow, 1);
      return;
    }
    memcpy(job->dst + at, w, (size_t)len);
  }
  ndp_wr32(job->dst + job->bstarts_pos + 4 * j, at);
}

static void compress_block_from(cjob *job, const uint8_t *src, int32_t j) {
  compress_block_at(job, src, src + (size_t)j * job->blocksize, j);
}

static void compress_block(void *ctx, int32_t j) {
  cjob *job = (cjob *)ctx;
  compress_block_from(job, job->src, j);
}

/* Early exit for big chunks of noise: encode two sample blocks (the first and the
 * middle one) into scratch; when neither shrinks by 2%, the chunk would end as a
 * memcpy fallback after every block had been filtered and encoded for nothing, so
 * it is stored uncompressed at once.  Chunks that mix noise and structure can lose
 * their compressible part this way when both samples fall on noise. */
#define SAMPLE_MIN_BLOCKS 8

static int sample_is_noise(cjob *job, int32_t j) {
  int32_t off = j * job->blocksize;
  int32_t bsize = job->nbytes - off < job->blocksize ? job->nbytes - off : job->blocksize;
  uint8_t *a = ndp_scratch(0, (size_t)job->blocksize);
  uint8_t *b = ndp_scratch(1, (size_t)job->blocksize);
  int32_t cap = bsize + 5 * job->typesize + 8;
  uint8_t *w = ndp_scratch(2, (size_t)cap);
  if (a == NULL || b == NULL || w == NULL) return 0;
  const uint8_t *fb;
  ndp_error ferr = {0, {0}};
  if (ndp_pipeline_forward(job->filters, job->meta, job->typesize, job->src, off,
                           job->src + off, bsize, a, b, &fb, &job->nd, &ferr) != NDP_OK)
    return 0;                            /* the real pass reports the error */
  int zero_block, errcode = 0;
  ndp_error cerr = {0, {0}};
  int32_t len = encode_streams(job, fb, bsize, w, cap, &zero_block, &errcode, &cerr);
  return !errcode && (len < 0 || len >= bsize - bsize / 50);
}

static int looks_incompressible(cjob *job) {
  if (job->nblocks < SAMPLE_MIN_BLOCKS) return 0;
  return sample_is_noise(job, 0) && sample_is_noise(job, job->nblocks / 2);
}

typedef struct {
  const uint8_t *src;
  uint8_t *dst;
  int32_t n;
} copyjob;

#define COPY_PIECE (1 << 20)

static void copy_piece(void *ctx, int32_t k) {
  copyjob *c = (copyjob *)ctx;
  int32_t off = k * COPY_PIECE;
  int32_t len = c->n - off < COPY_PIECE ? c->n - off : COPY_PIECE;
  memcpy(c->dst + off, c->src + off, (size_t)len);
}

/* Store the data uncompressed after the header (in parallel: on a fresh output
 * buffer the page faults cost more than the copy). */
static int32_t emit_memcpy(const uint8_t *src, int32_t nbytes, uint8_t *dst, int32_t dstsize,
                           int nthreads, int header_only, ndp_error *err) {
  if (header_only) {            /* the caller writes the bytes after the header */
    dst[2] |= 0x02;
    dst[31] &= (uint8_t)~0x01;
    ndp_wr32(dst + 12, nbytes + NDP_EXT_HEADER);
    return NDP_EXT_HEADER;
  }
  if ((int64_t)nbytes + NDP_EXT_HEADER > dstsize)
    return ndp_fail(err, NDP_ERR_DEST_SIZE,
                    "destination of %d bytes cannot hold %d bytes stored uncompressed",
                    (int)dstsize, (int)(nbytes + NDP_EXT_HEADER));
  copyjob c = {src, dst + NDP_EXT_HEADER, nbytes};
  ndp_parallel_for(nthreads, (int32_t)(((int64_t)nbytes + COPY_PIECE - 1) / COPY_PIECE),
                   copy_piece, &c);
  dst[2] |= 0x02;
  dst[31] &= (uint8_t)~0x01;   /* no dictionary in a memcpyed chunk */
  ndp_wr32(dst + 12, nbytes + NDP_EXT_HEADER);
  return nbytes + NDP_EXT_HEADER;
}

static int check_params(const ndp_cparams *cp, int32_t srcsize, ndp_error *err) {
  if (cp->clevel < 0 || cp->clevel > 9)
    return ndp_fail(err, NDP_ERR_PARAM, "clevel must be 0..9, got %d", cp->clevel);
  if (cp->typesize < 1)
    return ndp_fail(err, NDP_ERR_PARAM, "typesize must be >= 1, got %d", (int)cp->typesize);
  if (cp->blocksize < 0)
    return ndp_fail(err, NDP_ERR_PARAM, "blocksize must be >= 0, got %d", (int)cp->blocksize);
  if (cp->blocksize > NDP_MAX_BLOCKSIZE)
    return ndp_fail(err, NDP_ERR_PARAM, "blocksize %d exceeds the maximum %d",
                    (int)cp->blocksize, NDP_MAX_BLOCKSIZE);
  if (cp->splitmode < NDP_ALWAYS_SPLIT || cp->splitmode > NDP_FORWARD_COMPAT_SPLIT)
    return ndp_fail(err, NDP_ERR_PARAM, "splitmode must be 1..4, got %d", cp->splitmode);
  if (srcsize < 0 || srcsize > NDP_MAX_BUFFERSIZE)
    return ndp_fail(err, NDP_ERR_PARAM, "source of %ld bytes exceeds the chunk limit of %d bytes",
                    (long)srcsize, NDP_MAX_BUFFERSIZE);
  if (!ndp_codec_available(cp->compcode)) {
    if (*ndp_codec_missing(cp->compcode))
      return ndp_fail(err, NDP_ERR_CODEC, "codec %d (%s): %s", cp->compcode,
                      ndp_nd_codec_name(cp->compcode), ndp_codec_missing(cp->compcode));
    return ndp_fail(err, NDP_ERR_CODEC, "codec %d is not available (built in: 0 blosclz, "
                    "1 lz4, 2 lz4hc, 4 zlib, 5 zstd, 32 ndlz, 33-35 zfp; 160..255 when "
                    "registered)", cp->compcode);
  }
  if (ndp_codec_is_nd(cp->compcode) && cp->clevel > 0 && ndp_nd_get()->ndim == 0)
    return ndp_fail(err, NDP_ERR_CODEC, "codec %d (%s) needs the blocks' n-d shape: write "
                    "through an n-d array", cp->compcode, ndp_nd_codec_name(cp->compcode));
  if (cp->use_dict && ndp_codec_is_nd(cp->compcode))
    return ndp_fail(err, NDP_ERR_PARAM, "use_dict with the n-d codec %d", cp->compcode);
  if (cp->use_dict && cp->compcode != NDP_ZSTD && cp->compcode != NDP_LZ4 &&
      cp->compcode != NDP_LZ4HC)
    return ndp_fail(err, NDP_ERR_PARAM, "use_dict needs the zstd, lz4 or lz4hc codec, not %d",
                    cp->compcode);
  int32_t ts = cp->typesize > NDP_MAX_TYPESIZE ? 1 : cp->typesize;
  return ndp_pipeline_check(cp->filters, cp->filters_meta, ts, ndp_nd_get(), err);
}

/* FORMAT.md 1.7: filter every block, train a dictionary of at most
 * min(32 KiB, nbytes / 20) bytes on their streams.  Returns its size (0: none). */
static int32_t train_dict(const cjob *job, uint8_t *dict, ndp_error *err) {
  int32_t cap = job->nbytes / 20 < NDP_MAX_DICT ? job->nbytes / 20 : NDP_MAX_DICT;
  if (cap < 256) return 0;
  uint8_t *filtered = (uint8_t *)malloc((size_t)job->nbytes);
  size_t *sizes = (size_t *)malloc(sizeof(size_t) * (size_t)job->nblocks * (size_t)job->typesize);
  uint8_t *a = ndp_scratch(0, (size_t)job->blocksize), *b = ndp_scratch(1, (size_t)job->blocksize);
  int32_t nsamples = 0, dsize = 0;
  if (filtered == NULL || sizes == NULL || a == NULL || b == NULL) {
    dsize = ndp_fail(err, NDP_ERR_MEMORY, "cannot allocate the dictionary training buffer");
    goto done;
  }
  for (int32_t j = 0; j < job->nblocks; j++) {
    int32_t off = j * job->blocksize;
    int32_t bsize = job->nbytes - off < job->blocksize ? job->nbytes - off : job->blocksize;
    const uint8_t *fb;
    int rc = ndp_pipeline_forward(job->filters, job->meta, job->typesize, job->src, off,
                                  job->src + off, bsize, a, b, &fb, &job->nd, err);
    if (rc != NDP_OK) { dsize = rc; goto done; }
    memcpy(filtered + off, fb, (size_t)bsize);
    int nstreams = (job->split && bsize == job->blocksize) ? job->typesize : 1;
    for (int k = 0; k < nstreams; k++) sizes[nsamples++] = (size_t)(bsize / nstreams);
  }
  dsize = ndp_dict_train(dict, cap, filtered, sizes, nsamples);
done:
  free(filtered);
  free(sizes);
  return dsize;
}

int32_t ndp_compress(const ndp_cparams *cp, const void *src, int32_t srcsize, void *dst,
                     int32_t dstsize, ndp_error *err) {
  return ndp_compress_ex(cp, src, srcsize, dst, dstsize, 0, err);
}

/* Write the header of a compressed (not memcpyed) chunk and set up `job` for it
 * (no dictionary yet). */
static void start_job(cjob *job, const ndp_cparams *cp, const uint8_t *src, int32_t nbytes,
                      uint8_t *dst, int32_t dstsize) {
  int32_t ts = cp->typesize > NDP_MAX_TYPESIZE ? 1 : cp->typesize;
  int32_t blocksize = ndp_auto_blocksize(cp, nbytes);
  int has_delta = 0;
  for (int i = 0; i < NDP_NFILTERS; i++) has_delta |= cp->filters[i] == NDP_DELTA;
  int split = ndp_split_rule(cp, ts, blocksize) && blocksize % ts == 0;
  int flags = 0x05 | (has_delta ? 0x08 : 0) | (split ? 0 : 0x10) |
              (ndp_codec_format(cp->compcode) << 5);
  ndp_write_header(dst, 5, flags, cp->typesize, nbytes, blocksize, 0);
  memcpy(dst + 16, cp->filters, NDP_NFILTERS);
  dst[22] = (uint8_t)cp->compcode;
  dst[23] = (uint8_t)cp->compcode_meta;
  memcpy(dst + 24, cp->filters_meta, NDP_NFILTERS);

  job->cp = cp;
  job->src = src;
  job->nbytes = nbytes;
  job->blocksize = blocksize;
  job->nblocks = (int32_t)(((int64_t)nbytes + blocksize - 1) / blocksize);
  job->typesize = ts;
  job->split = split;
  job->sequential = cp->nthreads <= 1 || job->nblocks == 1;
  memcpy(job->filters, cp->filters, NDP_NFILTERS);
  memcpy(job->meta, cp->filters_meta, NDP_NFILTERS);
  job->dst = dst;
  job->limit = nbytes + NDP_MAX_OVERHEAD < dstsize ? nbytes + NDP_MAX_OVERHEAD : dstsize;
  job->bstarts_pos = NDP_EXT_HEADER;
  job->dict = NULL;
  job->crcs = NULL;
  job->nd = *ndp_nd_get();
  int32_t data_start = NDP_EXT_HEADER + 4 * job->nblocks;
  atomic_init(&job->pos, data_start);
  atomic_init(&job->overflow, data_start > job->limit);
  atomic_init(&job->all_zero, 1);
  atomic_init(&job->failed, 0);
  atomic_init(&job->noise_first, 0);
  atomic_init(&job->noise_mid, 0);
  job->err.code = 0;
  job->err.msg[0] = 0;
}

/* The chunk's size once every block went through compress_block: its error, the
 * memcpy fallback (overflow; `noise`: the samples said noise), the zero collapse, or
 * the compressed size written into the header. */
static int32_t end_job(cjob *job, int noise, int32_t dstsize, int header_only,
                       ndp_error *err) {
  const ndp_cparams *cp = job->cp;
  if (atomic_load(&job->failed)) return ndp_fail(err, job->err.code, "%s", job->err.msg);
  if (noise || atomic_load(&job->overflow))
    return emit_memcpy(job->src, job->nbytes, job->dst, dstsize, cp->nthreads, header_only,
                       err);
  if (atomic_load(&job->all_zero)) {
    ndp_wr32(job->dst + 12, NDP_EXT_HEADER);
    job->dst[31] = NDP_SPECIAL_ZERO << 4;
    return NDP_EXT_HEADER;
  }
  int32_t cbytes = atomic_load(&job->pos);
  ndp_wr32(job->dst + 12, cbytes);
  return cbytes;
}

static void header_memcpyed(uint8_t *dst, const ndp_cparams *cp, int32_t nbytes) {
  ndp_write_header(dst, 5, 0x05, cp->typesize, nbytes, ndp_auto_blocksize(cp, nbytes),
                   NDP_EXT_HEADER);
  memcpy(dst + 16, cp->filters, NDP_NFILTERS);
  dst[22] = (uint8_t)cp->compcode;
}

int32_t ndp_compress_ex(const ndp_cparams *cp, const void *src_, int32_t srcsize, void *dst_,
                        int32_t dstsize, int options, ndp_error *err) {
  int header_only = (options & NDP_RAW_HEADER_ONLY) != 0;
  const uint8_t *src = (const uint8_t *)src_;
  uint8_t *dst = (uint8_t *)dst_;
  int rc = check_params(cp, srcsize, err);
  if (rc != NDP_OK) return rc;
  if (dstsize < NDP_EXT_HEADER)
    return ndp_fail(err, NDP_ERR_DEST_SIZE, "destination must hold at least 32 bytes");

  int32_t nbytes = srcsize;
  /* Header as computed for compression (FORMAT.md 1.2/1.3/1.8). */
  if (cp->clevel == 0 || nbytes < 32) {
    header_memcpyed(dst, cp, nbytes);
    return emit_memcpy(src, nbytes, dst, dstsize, cp->nthreads, header_only, err);
  }
  cjob job;
  start_job(&job, cp, src, nbytes, dst, dstsize);
  int32_t data_start = atomic_load(&job.pos);
  ndp_cdict cdict = {NULL, 0, NULL};
  if (cp->use_dict) {
    /* The dictionary is stored after bstarts; train it straight into place. */
    uint8_t dictbuf[NDP_MAX_DICT];
    int32_t dsize = train_dict(&job, dictbuf, err);
    if (dsize < 0) return dsize;
    if (dsize > 0 && (int64_t)data_start + 4 + dsize < job.limit) {
      ndp_wr32(dst + data_start, dsize);
      memcpy(dst + data_start + 4, dictbuf, (size_t)dsize);
      if (ndp_cdict_init(&cdict, cp->compcode, cp->clevel, dst + data_start + 4, dsize) != NDP_OK)
        return ndp_fail(err, NDP_ERR_MEMORY, "cannot build the compression dictionary");
      job.dict = &cdict;
      dst[31] |= 0x01;
      data_start += 4 + dsize;
      atomic_store(&job.pos, data_start);
      atomic_store(&job.overflow, data_start > job.limit);
    }
  }
  pthread_mutex_init(&job.err_lock, NULL);

  /* (n-d codecs: as C-Blosc2, no probe; ZFP is lossy, and stored raw it would not be) */
  int noise = !atomic_load(&job.overflow) && job.dict == NULL &&
              !ndp_codec_is_nd(cp->compcode) && looks_incompressible(&job);
  if (!noise && !atomic_load(&job.overflow))
    ndp_parallel_for(cp->nthreads, job.nblocks, compress_block, &job);
  pthread_mutex_destroy(&job.err_lock);
  ndp_cdict_free(&cdict);
  return end_job(&job, noise, dstsize, header_only, err);
}

/* ---- chunks encoded in parts ---- */

struct ndp_cparts {
  ndp_cparams cp;
  cjob job;
  int32_t dstsize;
  int crc_known;              /* ndp_cparts_end joined the blocks' crcs into `crc` */
  _Atomic int sourceless;     /* blocks were added from copies: the chunk's buffer lacks them */
  uint32_t crc;
  uint32_t prefix_crc;        /* the header's and bstarts' crc32c (join_crcs) */
  uint32_t block_crcs[];      /* one per block (job.crcs) */
};

int ndp_cparts_begin(ndp_cparts **out, const ndp_cparams *cp, int32_t nbytes, void *dst,
                     int32_t dstsize, ndp_error *err) {
  *out = NULL;
  int rc = check_params(cp, nbytes, err);
  if (rc != NDP_OK) return rc;
  if (dstsize < NDP_EXT_HEADER || (int64_t)dstsize < (int64_t)nbytes + NDP_MAX_OVERHEAD)
    return ndp_fail(err, NDP_ERR_DEST_SIZE, "destination of %d bytes; %lld needed",
                    (int)dstsize, (long long)nbytes + NDP_MAX_OVERHEAD);
  int has_delta = 0;
  for (int i = 0; i < NDP_NFILTERS; i++) has_delta |= cp->filters[i] == NDP_DELTA;
  /* DELTA needs block 0 before the others, a dictionary every block first */
  if (cp->clevel == 0 || nbytes < 32 || cp->use_dict || has_delta) return 0;
  int32_t blocksize = ndp_auto_blocksize(cp, nbytes);
  size_t nblocks = (size_t)(((int64_t)nbytes + blocksize - 1) / blocksize);
  ndp_cparts *p = (ndp_cparts *)calloc(1, sizeof *p + nblocks * sizeof(uint32_t));
  if (p == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "cannot allocate a chunk encoder");
  p->cp = *cp;
  p->dstsize = dstsize;
  start_job(&p->job, &p->cp, NULL, nbytes, (uint8_t *)dst, dstsize);
  p->job.sequential = 0;            /* blocks of several callers: reserved positions */
  p->job.crcs = p->block_crcs;
  pthread_mutex_init(&p->job.err_lock, NULL);
  *out = p;
  return 1;
}

int32_t ndp_cparts_blocksize(const ndp_cparts *p) { return p->job.blocksize; }

int ndp_cparts_nd(const ndp_cparts *p) {
  if (ndp_codec_is_nd(p->cp.compcode)) return 1;
  for (int i = 0; i < NDP_NFILTERS; i++)
    if (ndp_filter_is_nd(p->cp.filters[i])) return 1;
  return 0;
}

int32_t ndp_cparts_nblocks(const ndp_cparts *p) { return p->job.nblocks; }

int ndp_cparts_add(ndp_cparts *p, const void *chunk_src, int32_t first, int32_t count,
                   ndp_error *err) {
  cjob *job = &p->job;
  if (first < 0 || count < 0 || first > job->nblocks - count)
    return ndp_fail(err, NDP_ERR_PARAM, "blocks [%d, %d) outside the chunk's %d blocks",
                    (int)first, (int)first + (int)count, (int)job->nblocks);
  for (int32_t j = first; j < first + count; j++) {
    compress_block_from(job, (const uint8_t *)chunk_src, j);
    if (atomic_load(&job->failed) || atomic_load(&job->overflow)) break;
  }
  return NDP_OK;
}

int ndp_cparts_add_block(ndp_cparts *p, const void *block, int32_t j, ndp_error *err) {
  cjob *job = &p->job;
  if (j < 0 || j >= job->nblocks)
    return ndp_fail(err, NDP_ERR_PARAM, "block %d outside the chunk's %d blocks", (int)j,
                    (int)job->nblocks);
  atomic_store(&p->sourceless, 1);
  compress_block_at(job, NULL, (const uint8_t *)block, j);
  return NDP_OK;
}

/* A chunk that ends within this many bytes of its limit is encoded again whole: one
 * thread writing in place gives a codec only the room left (zstd and BloscLZ give up
 * some bytes before the end of their output), so near the limit its streams may
 * differ from those encoded with a block's worth of room. */
#define PARTS_MARGIN 4096

/* The crc32c of the chunk ndp_cparts_end wrote with every block at its reserved
 * position: the header and bstarts hashed, then each block's crc joined in the order
 * of the positions (blocks are contiguous in reservation order).  0 when the layout
 * is not that one (the caller hashes the chunk). */
static int join_crcs(ndp_cparts *p, int32_t cbytes) {
  cjob *job = &p->job;
  int32_t n = job->nblocks, data_start = job->bstarts_pos + 4 * n;
  int32_t order_buf[64];
  int32_t *order = n <= 64 ? order_buf : (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
  if (order == NULL || ndp_blocks_by_start(job->dst + job->bstarts_pos, n, order) != NDP_OK) {
    if (order != order_buf) free(order);
    return 0;
  }
  uint32_t c = ndp_crc32c(0, job->dst, (size_t)data_start);
  p->prefix_crc = c;
  int32_t at = data_start;
  int ok = 1;
  for (int32_t k = 0; k < n && ok; k++) {
    int32_t s = ndp_rd32(job->dst + job->bstarts_pos + 4 * order[k]);
    int32_t e = k + 1 < n ? ndp_rd32(job->dst + job->bstarts_pos + 4 * order[k + 1]) : cbytes;
    ok = s == at && e > s;
    if (ok) c = ndp_crc32c_combine(c, job->crcs[order[k]], (size_t)(e - s));
    at = e;
  }
  if (order != order_buf) free(order);
  p->crc = c;
  return ok && at == cbytes;
}

/* Whether ndp_cparts_end stores the chunk uncompressed (noise or overflow) or encodes
 * it again whole (near its limit): both read the whole chunk's buffer. */
static int end_reads_source(ndp_cparts *p, int *noise, int *near) {
  cjob *job = &p->job;
  *noise = !ndp_codec_is_nd(p->cp.compcode) && job->nblocks >= SAMPLE_MIN_BLOCKS &&
           atomic_load(&job->noise_first) &&
           atomic_load(&job->noise_mid) && !atomic_load(&job->failed);
  *near = !*noise && !atomic_load(&job->failed) && !atomic_load(&job->overflow) &&
          atomic_load(&job->pos) > job->limit - PARTS_MARGIN;
  return !atomic_load(&job->failed) && (*noise || *near || atomic_load(&job->overflow));
}

int ndp_cparts_needs_source(ndp_cparts *p) {
  int noise, near;
  return atomic_load(&p->sourceless) && end_reads_source(p, &noise, &near);
}

void ndp_cparts_source_filled(ndp_cparts *p) { atomic_store(&p->sourceless, 0); }

int32_t ndp_cparts_end(ndp_cparts *p, const void *chunk_src, ndp_error *err) {
  cjob *job = &p->job;
  job->src = (const uint8_t *)chunk_src;
  p->crc_known = 0;
  int noise, near;
  if (end_reads_source(p, &noise, &near) && atomic_load(&p->sourceless))
    return ndp_fail(err, NDP_ERR_PARAM, "the chunk must be stored uncompressed or encoded "
                    "again, and its buffer lacks the blocks added from copies "
                    "(fill it, then ndp_cparts_source_filled)");
  if (near) {
    ndp_cparams one = p->cp;
    one.nthreads = 1;
    ndp_nd mine = *ndp_nd_get();          /* encoded again with the layout of the begin */
    ndp_nd_set(&job->nd, NULL);
    int32_t r = ndp_compress(&one, chunk_src, job->nbytes, job->dst, p->dstsize, err);
    ndp_nd_set(&mine, NULL);
    return r;
  }
  int32_t r = end_job(job, noise, p->dstsize, 0, err);
  /* a chunk of blocks (not the memcpy fallback nor the zero collapse) */
  if (r > job->bstarts_pos && !noise && !atomic_load(&job->overflow) &&
      !(job->dst[2] & 0x02) && (job->dst[31] & 0x70) == 0)
    p->crc_known = join_crcs(p, r);
  return r;
}

int ndp_cparts_crc(const ndp_cparts *p, uint32_t *crc) {
  if (!p->crc_known) return 0;
  *crc = p->crc;
  return 1;
}

int32_t ndp_cparts_block_sums(const ndp_cparts *p, uint32_t *out, int32_t cap) {
  int32_t n = p->job.nblocks;
  if (!p->crc_known || out == NULL || cap < n + 1) return 0;
  out[0] = p->prefix_crc;
  memcpy(out + 1, p->job.crcs, sizeof(uint32_t) * (size_t)n);
  return n + 1;
}

void ndp_cparts_free(ndp_cparts *p) {
  if (p == NULL) return;
  pthread_mutex_destroy(&p->job.err_lock);
  free(p);
}

/* ---- patching blocks of a chunk ---- */

/* The end of regular block j starting at `pos` (its streams walked, every length
 * checked); *zero tells whether every stream is a zero run. */
static int block_end(const uint8_t *c, const ndp_chunk_info *ci, int32_t j, int32_t pos,
                     int nstreams, int32_t *end, int *zero, ndp_error *err) {
  *zero = 1;
  for (int s = 0; s < nstreams; s++) {
    int32_t cs;
    const uint8_t *data;
    int rc = ndp_next_stream(c, ci->cbytes, j, s, &pos, &cs, &data, err);
    if (rc != NDP_OK) return rc;
    *zero &= cs == 0;
  }
  *end = pos;
  return NDP_OK;
}

int32_t ndp_patch_blocks(const void *chunk, int32_t srcsize, int clevel, const int32_t *ids,
                         int32_t nids, const void *raw_, int64_t rawsize, void *dst_,
                         int32_t dstsize, ndp_error *err) {
  const uint8_t *c = (const uint8_t *)chunk, *raw = (const uint8_t *)raw_;
  uint8_t *dst = (uint8_t *)dst_;
  ndp_chunk_info ci;
  int rc = ndp_chunk_parse(c, srcsize, &ci, err);
  if (rc != NDP_OK) return rc;
  if (clevel < 1 || clevel > 9)
    return ndp_fail(err, NDP_ERR_PARAM, "clevel must be 1..9 to patch blocks, got %d", clevel);
  /* chunks whose blocks are not independent streams of the chunk's own codec */
  int has_delta = 0;
  for (int i = 0; i < NDP_NFILTERS; i++) has_delta |= ci.filters[i] == NDP_DELTA;
  if (ci.special || ci.memcpyed || ci.vlblocks || ci.use_dict || has_delta || !ci.extended ||
      ci.nbytes == 0 || !ndp_codec_available(ci.compcode))
    return 0;
  if ((int64_t)nids * ci.blocksize > rawsize)
    return ndp_fail(err, NDP_ERR_PARAM, "%d blocks need %lld raw bytes, %lld given", (int)nids,
                    (long long)nids * ci.blocksize, (long long)rawsize);
  for (int32_t k = 0; k < nids; k++)
    if (ids[k] < 0 || ids[k] >= ci.nblocks || (k > 0 && ids[k] <= ids[k - 1]))
      return ndp_fail(err, NDP_ERR_PARAM, "block ids must be increasing and in [0, %d)",
                      (int)ci.nblocks);
  int32_t data_start = ci.header_len + 4 * ci.nblocks;
  if (data_start > ci.cbytes || data_start > dstsize)
    return ndp_fail(err, NDP_ERR_DEST_SIZE, "chunk or destination shorter than its bstarts");

  ndp_cparams cp;
  memset(&cp, 0, sizeof cp);
  cp.compcode = ci.compcode;
  cp.compcode_meta = ci.compcode_meta;
  cp.clevel = clevel;
  cp.typesize = ci.typesize;
  cp.nthreads = 1;
  memcpy(cp.filters, ci.filters, NDP_NFILTERS);
  memcpy(cp.filters_meta, ci.filters_meta, NDP_NFILTERS);
  cjob job;
  memset(&job, 0, sizeof job);
  job.cp = &cp;
  job.nbytes = ci.nbytes;
  job.blocksize = ci.blocksize;
  job.nblocks = ci.nblocks;
  job.typesize = ci.typesize;
  job.split = !ci.dont_split;
  job.nd = *ndp_nd_get();
  memcpy(job.filters, ci.filters, NDP_NFILTERS);
  memcpy(job.meta, ci.filters_meta, NDP_NFILTERS);
  uint8_t *a = ndp_scratch(0, (size_t)ci.blocksize), *b = ndp_scratch(1, (size_t)ci.blocksize);
  if (a == NULL || b == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "cannot allocate block buffers");

  memcpy(dst, c, (size_t)ci.header_len);
  int32_t pos = data_start, k = 0;
  int all_zero = 1;
  for (int32_t j = 0; j < ci.nblocks; j++) {
    int32_t off = j * ci.blocksize;
    int32_t bsize = ci.nbytes - off < ci.blocksize ? ci.nbytes - off : ci.blocksize;
    int zero;
    ndp_wr32(dst + ci.header_len + 4 * j, pos);
    if (k < nids && ids[k] == j) {            /* a new block: filtered and encoded here */
      const uint8_t *fb;
      const uint8_t *src = raw + (size_t)k * ci.blocksize;
      if ((rc = ndp_pipeline_forward(job.filters, job.meta, job.typesize, src, off, src, bsize,
                                     a, b, &fb, &job.nd, err)) != NDP_OK)
        return rc;
      int errcode = 0;
      ndp_error cerr = {0, {0}};
      int32_t len = encode_streams(&job, fb, bsize, dst + pos, dstsize - pos, &zero, &errcode,
                                   &cerr);
      if (errcode) return ndp_fail(err, errcode, "%s (block %d)", cerr.msg, (int)j);
      if (len < 0)
        return ndp_fail(err, NDP_ERR_DEST_SIZE, "destination of %d bytes too small",
                        (int)dstsize);
      pos += len;
      k++;
    } else {                                  /* an old block: its bytes copied */
      int32_t start = ndp_rd32(c + ci.header_len + 4 * j), end = 0;
      if (start < data_start || start >= ci.cbytes)
        return ndp_fail(err, NDP_ERR_FORMAT, "block %d starts at %d, outside [%d, %d)",
                        (int)j, (int)start, (int)data_start, (int)ci.cbytes);
      int nstreams = (job.split && bsize == ci.blocksize) ? job.typesize : 1;
      if ((rc = block_end(c, &ci, j, start, nstreams, &end, &zero, err)) != NDP_OK) return rc;
      if (end - start > dstsize - pos)
        return ndp_fail(err, NDP_ERR_DEST_SIZE, "destination of %d bytes too small",
                        (int)dstsize);
      memcpy(dst + pos, c + start, (size_t)(end - start));
      pos += end - start;
    }
    all_zero &= zero;
  }
  if (all_zero)                                /* as the writer does: a zero special chunk */
    return ndp_chunk_special(NDP_SPECIAL_ZERO, ci.nbytes, ci.typesize, ci.blocksize, NULL, dst,
                             dstsize, err);
  ndp_wr32(dst + 12, pos);
  return pos;
}
