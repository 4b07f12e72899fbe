/* Chunk reader (FORMAT.md 1.4-1.7, 1.9, 1.11): whole chunks, item ranges and
 * block subsets.  Every length read from the chunk is checked against cbytes
 * before it is used. */
#include <stdatomic.h>
#include <stdlib.h>

#include "chunk.h"

#include "../codecs/codecs.h"
#include "../codecs/ndcodecs.h"
#include "../common/tls.h"
#include "../filters/filters.h"

typedef ndp_djob djob;


static int32_t block_size(const ndp_chunk_info *ci, int32_t j) {
  int32_t off = j * ci->blocksize;
  return ci->nbytes - off < ci->blocksize ? ci->nbytes - off : ci->blocksize;
}

/* Fill n bytes for chunk offset `off` of a special chunk. */
static void fill_special(const djob *job, int32_t off, int32_t n, uint8_t *out) {
  const ndp_chunk_info *ci = &job->ci;
  if (ci->special == NDP_SPECIAL_ZERO || ci->special == NDP_SPECIAL_UNINIT) {
    memset(out, 0, (size_t)n);
    return;
  }
  uint8_t pat[8];
  const uint8_t *v;
  int32_t t;
  if (ci->special == NDP_SPECIAL_NAN) {
    t = ci->typesize;
    if (t == 4) { float f = __builtin_nanf(""); memcpy(pat, &f, 4); }
    else { double d = __builtin_nan(""); memcpy(pat, &d, 8); }
    v = pat;
  } else {
    t = ci->cbytes - NDP_EXT_HEADER;
    v = job->src + NDP_EXT_HEADER;
  }
  /* Write the first period, then double the filled prefix. */
  int32_t phase = off % t, done = 0;
  while (done < n && done < t) { out[done] = v[(phase + done) % t]; done++; }
  while (done < n) {
    int32_t c = done <= n - done ? done : n - done;
    c -= c % t;
    if (c == 0) c = n - done < t ? n - done : t;
    memcpy(out + done, out, (size_t)c);
    done += c;
  }
}

/* The position of regular block j's first stream, checked against the data area. */
static int block_start(const djob *job, int32_t j, int32_t *pos, ndp_error *err) {
  *pos = ndp_rd32(job->src + job->ci.header_len + 4 * j);
  if (*pos < job->data_start || *pos >= job->ci.cbytes)
    return ndp_fail(err, NDP_ERR_FORMAT, "block %d starts at %d, outside the data area [%d, %d)",
                    (int)j, (int)*pos, (int)job->data_start, (int)job->ci.cbytes);
  return NDP_OK;
}

/* Stream s of block j at *pos (ndp_next_stream, chunk.h). */
static int next_stream(const djob *job, int32_t j, int s, int32_t *pos, int32_t *csize,
                       const uint8_t **data, ndp_error *err) {
  return ndp_next_stream(job->src, job->ci.cbytes, j, s, pos, csize, data, err);
}

/* Decode compressed stream s of block j (csize bytes at p) into o (neblock bytes),
 * at least its first `want` bytes (want >= neblock: all of it). */
static int decode_stream(const djob *job, int32_t j, int s, const uint8_t *p, int32_t csize,
                         uint8_t *o, int32_t neblock, int32_t want, ndp_error *err) {
  const ndp_chunk_info *ci = &job->ci;
  if (ndp_codec_is_nd(ci->compcode)) {
    ndp_error e = {0, {0}};
    int32_t r = ndp_nd_decode(ci->compcode, ci->compcode_meta, job->typesize, &job->nd, p,
                              csize, o, neblock, &e);
    if (r == neblock) return NDP_OK;
    return ndp_fail(err, e.code ? e.code : NDP_ERR_FORMAT, "block %d: %s", (int)j, e.msg);
  }
  int32_t r = ndp_codec_decode_prefix(ci->compcode, ci->compcode_meta, p, csize, o, neblock,
                                      want, job->has_dict ? &job->dict : NULL);
  if (r == NDP_ERR_CODEC)
    return ndp_fail(err, NDP_ERR_CODEC, "chunk uses codec %d, which is not available",
                    ci->compcode);
  if (want < neblock && r >= want && r <= neblock) return NDP_OK;
  if (r != neblock)
    return ndp_fail(err, r == NDP_ERR_CALLBACK ? NDP_ERR_CALLBACK : NDP_ERR_FORMAT,
                    "block %d stream %d: corrupt %s stream (decoded %d of %d bytes)",
                    (int)j, s, ci->compcode == NDP_ZSTD ? "zstd" :
                    ci->compcode == NDP_ZLIB ? "zlib" :
                    ci->compcode == NDP_BLOSCLZ ? "blosclz" : "codec",
                    (int)(r < 0 ? 0 : r), (int)neblock);
  return NDP_OK;
}

/* Decode the streams of regular block j into `out` (bsize bytes; a single stream
 * only up to byte `need`). */
static int decode_streams(const djob *job, int32_t j, int32_t bsize, uint8_t *out,
                          int32_t need, ndp_error *err) {
  const ndp_chunk_info *ci = &job->ci;
  int32_t pos, csize = 0;
  int rc = block_start(job, j, &pos, err);
  if (rc != NDP_OK) return rc;
  int nstreams = (!ci->dont_split && bsize == ci->blocksize) ? job->typesize : 1;
  if (bsize % nstreams != 0)
    return ndp_fail(err, NDP_ERR_FORMAT, "block %d of %d bytes cannot be split in %d streams",
                    (int)j, (int)bsize, nstreams);
  int32_t neblock = bsize / nstreams;
  if (nstreams > 1 || need > bsize) need = neblock;
  for (int s = 0; s < nstreams; s++) {
    uint8_t *o = out + (size_t)s * neblock;
    const uint8_t *p = NULL;
    rc = next_stream(job, j, s, &pos, &csize, &p, err);
    if (rc != NDP_OK) return rc;
    if (csize <= 0) memset(o, csize == 0 ? 0 : -csize, (size_t)need);
    else if (csize == neblock) memcpy(o, p, (size_t)need);
    else if ((rc = decode_stream(job, j, s, p, csize, o, neblock, need, err)) != NDP_OK)
      return rc;
  }
  return NDP_OK;
}

/* Whether regular blocks are split in one stream per byte and SHUFFLE (with the
 * typesize as group) is the only filter: stream s is byte s of every item.  (A group
 * other than the typesize, as in python-blosc2's NumPy "U" dtypes, makes other
 * planes.) */
static int plain_shuffle(const ndp_chunk_info *ci) {
  if (ci->special || ci->memcpyed || ci->vlblocks || ci->dont_split || ci->typesize < 2 ||
      ci->blocksize % ci->typesize != 0)
    return 0;
  int shuffles = 0;
  for (int i = 0; i < NDP_NFILTERS; i++) {
    if (ci->filters[i] == NDP_SHUFFLE) {
      if (ci->filters_meta[i] != 0 && ci->filters_meta[i] != ci->typesize) return 0;
      shuffles++;
    } else if (ci->filters[i] != NDP_NOFILTER) {
      return 0;
    }
  }
  return shuffles == 1;
}

/* Full regular block j of a plain-shuffle chunk, its first `n` items: raw streams
 * are unshuffled from where they lie in the chunk, the others decoded (their first n
 * bytes at least) into a scratch buffer first; one unshuffle writes the items (no
 * copy of the raw streams). */
static int decode_shuffled(const djob *job, int32_t j, uint8_t *out, int32_t n,
                           ndp_error *err) {
  const ndp_chunk_info *ci = &job->ci;
  int32_t ts = job->typesize, neblock = ci->blocksize / ts, pos, csize = 0;
  int rc = block_start(job, j, &pos, err);
  if (rc != NDP_OK) return rc;
  uint8_t *a = ndp_scratch(0, (size_t)ci->blocksize);
  if (a == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "cannot allocate block buffers");
  const uint8_t *planes[256];
  for (int s = 0; s < ts; s++) {
    uint8_t *o = a + (size_t)s * neblock;
    const uint8_t *p = NULL;
    rc = next_stream(job, j, s, &pos, &csize, &p, err);
    if (rc != NDP_OK) return rc;
    planes[s] = o;
    if (csize <= 0) memset(o, csize == 0 ? 0 : -csize, (size_t)n);
    else if (csize == neblock) planes[s] = p;
    else if ((rc = decode_stream(job, j, s, p, csize, o, neblock, n, err)) != NDP_OK) return rc;
  }
  const ndp_filter_kernels *k = ndp_filters();
  (job->stream_out ? k->unshuffle_planes_stream : k->unshuffle_planes)((size_t)ts, (size_t)n,
                                                                       planes, out);
  return NDP_OK;
}

/* Decode block j (any kind of chunk) into out. */
static int decode_block(const djob *job, int32_t j, uint8_t *out, ndp_error *err) {
  const ndp_chunk_info *ci = &job->ci;
  int32_t off = j * ci->blocksize;
  int32_t bsize = block_size(ci, j);
  if (ci->special) {
    fill_special(job, off, bsize, out);
    return NDP_OK;
  }
  if (ci->memcpyed) {
    memcpy(out, job->src + ci->header_len + off, (size_t)bsize);
    return NDP_OK;
  }
  if (!job->active) return decode_streams(job, j, bsize, out, bsize, err);
  if (job->plain_shuffle && bsize == ci->blocksize)
    return decode_shuffled(job, j, out, bsize / job->typesize, err);
  uint8_t *a = ndp_scratch(0, (size_t)ci->blocksize);
  uint8_t *b = ndp_scratch(1, (size_t)ci->blocksize);
  if (a == NULL || b == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "cannot allocate block buffers");
  int rc = decode_streams(job, j, bsize, a, bsize, err);
  if (rc != NDP_OK) return rc;
  return ndp_pipeline_backward(ci->filters, ci->filters_meta, job->typesize, job->ref, off, a,
                               bsize, out, b, ci->version <= 2, &job->nd, err);
}

/* The first `need` bytes (at least) of block j into out: only what precedes them is
 * decoded where the layout allows (special, memcpyed, a single stream, or split
 * plain-shuffle streams), else the whole block. */
static int decode_block_prefix(const djob *job, int32_t j, uint8_t *out, int32_t need,
                               ndp_error *err) {
  const ndp_chunk_info *ci = &job->ci;
  int32_t bsize = block_size(ci, j);
  if (need >= bsize) return decode_block(job, j, out, err);
  if (need <= 0) return NDP_OK;
  if (ci->special) {
    fill_special(job, j * ci->blocksize, need, out);
    return NDP_OK;
  }
  if (ci->memcpyed) {
    memcpy(out, job->src + ci->header_len + (size_t)j * ci->blocksize, (size_t)need);
    return NDP_OK;
  }
  if (!job->active) return decode_streams(job, j, bsize, out, need, err);
  if (job->plain_shuffle && bsize == ci->blocksize)
    return decode_shuffled(job, j, out, (need + job->typesize - 1) / job->typesize, err);
  return decode_block(job, j, out, err);
}

static int djob_init(djob *job, const void *src, int32_t srcsize, ndp_error *err) {
  memset(job, 0, sizeof *job);
  int rc = ndp_chunk_parse(src, srcsize, &job->ci, err);
  if (rc != NDP_OK) return rc;
  const ndp_chunk_info *ci = &job->ci;
  job->src = (const uint8_t *)src;
  job->typesize = ci->typesize;
  job->active = ndp_pipeline_active(ci->filters);
  for (int i = 0; i < NDP_NFILTERS; i++) job->has_delta |= ci->filters[i] == NDP_DELTA;
  job->plain_shuffle = plain_shuffle(ci);
  job->data_start = ci->header_len + 4 * ci->nblocks;
  job->nd = *ndp_nd_get();
  if (ci->special || ci->memcpyed || ci->nbytes == 0) return NDP_OK;
  if (!ndp_codec_available(ci->compcode)) {
    if (*ndp_codec_missing(ci->compcode))
      return ndp_fail(err, NDP_ERR_CODEC, "chunk uses codec %d (%s): %s", ci->compcode,
                      ndp_nd_codec_name(ci->compcode), ndp_codec_missing(ci->compcode));
    return ndp_fail(err, NDP_ERR_CODEC,
                    "chunk uses codec %d, which is neither built in nor registered", ci->compcode);
  }
  if (ndp_codec_is_nd(ci->compcode) && (ci->vlblocks || ci->use_dict))
    return ndp_fail(err, NDP_ERR_FORMAT, "chunk of the n-d codec %d with %s", ci->compcode,
                    ci->vlblocks ? "variable-length blocks" : "a dictionary");
  if (ndp_codec_is_nd(ci->compcode) && ci->compcode != NDP_NDLZ && job->nd.ndim == 0)
    return ndp_fail(err, NDP_ERR_CODEC, "chunk uses codec %d (%s), which needs the blocks' "
                    "n-d shape (the \"b2nd\" metalayer): read it through its array",
                    ci->compcode, ndp_nd_codec_name(ci->compcode));
  if (ci->use_dict) {
    if (ci->compcode != NDP_ZSTD && ci->compcode != NDP_LZ4 && ci->compcode != NDP_LZ4HC)
      return ndp_fail(err, NDP_ERR_FORMAT, "dictionary chunk with codec %d", ci->compcode);
    if (ci->cbytes - job->data_start < 4)
      return ndp_fail(err, NDP_ERR_FORMAT, "dictionary size field past the end of the chunk");
    int32_t dsize = ndp_rd32(job->src + job->data_start);
    if (dsize <= 0 || dsize > NDP_MAX_DICT || dsize > ci->cbytes - job->data_start - 4)
      return ndp_fail(err, NDP_ERR_FORMAT, "invalid dictionary size %d", (int)dsize);
    if (ndp_dict_init(&job->dict, ci->compcode, job->src + job->data_start + 4, dsize) != NDP_OK)
      return ndp_fail(err, NDP_ERR_FORMAT, "invalid zstd dictionary");
    job->has_dict = 1;
    job->data_start += 4 + dsize;
  }
  ndp_failure_init(&job->fail);
  return NDP_OK;
}

static void djob_free(djob *job) {
  if (job->has_dict) ndp_dict_free(&job->dict);
  if (!(job->ci.special || job->ci.memcpyed || job->ci.nbytes == 0))
    pthread_mutex_destroy(&job->fail.lock);
}

/* ---- VL-block chunks (version 6) ---- */

static int32_t decode_vl(djob *job, uint8_t *dst, ndp_error *err) {
  const ndp_chunk_info *ci = &job->ci;
  const uint8_t *src = job->src;
  int32_t written = 0;
  for (int32_t j = 0; j < ci->nblocks; j++) {
    int32_t start = ndp_rd32(src + ci->header_len + 4 * j);
    int32_t end = j + 1 < ci->nblocks ? ndp_rd32(src + ci->header_len + 4 * (j + 1)) : ci->cbytes;
    if (start < job->data_start || end > ci->cbytes || end - start < 4)
      return ndp_fail(err, NDP_ERR_FORMAT, "VL block %d has invalid bounds [%d, %d)",
                      (int)j, (int)start, (int)end);
    int32_t usize = ndp_rd32(src + start);
    int32_t plen = end - start - 4;
    if (usize < 0 || usize > ci->nbytes - written)
      return ndp_fail(err, NDP_ERR_FORMAT, "VL block %d declares %d bytes, more than remain",
                      (int)j, (int)usize);
    uint8_t *a = ndp_scratch(0, (size_t)usize);
    uint8_t *b = ndp_scratch(1, (size_t)usize);
    if (a == NULL || b == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "out of memory");
    if (plen == usize) {
      memcpy(a, src + start + 4, (size_t)usize);
    } else {
      int32_t r = ndp_codec_decode(ci->compcode, ci->compcode_meta, src + start + 4, plen, a,
                                   usize, job->has_dict ? &job->dict : NULL);
      if (r != usize)
        return ndp_fail(err, NDP_ERR_FORMAT, "VL block %d: corrupt codec stream", (int)j);
    }
    int rc = ndp_pipeline_backward(ci->filters, ci->filters_meta, job->typesize,
                                   dst + written, 0, a, usize, dst + written, b, 0, &job->nd,
                                   err);
    if (rc != NDP_OK) return rc;
    written += usize;
  }
  if (written != ci->nbytes)
    return ndp_fail(err, NDP_ERR_FORMAT, "VL blocks decode to %d bytes, header says %d",
                    (int)written, (int)ci->nbytes);
  return written;
}

/* ---- whole chunk ---- */

/* The bytes of block j's span of the chunk: from its start to the next larger start
 * (the last to the end of src).  Blocks may lie in any order (a threaded compressor
 * stores each as it finishes), so the spans are found by sorting the starts; they
 * tile the chunk after its prefix (header, starts, dictionary) when every start lies
 * between the data's first byte and the chunk's end (plan_spans). */
static int32_t span_start(const djob *job, int32_t j) {
  return ndp_rd32(job->src + job->ci.header_len + 4 * j);
}

/* Fill job->order (the blocks by start) and job->span_end; 0 when a start lies
 * outside the data or memory is short (the caller then hashes the chunk whole). */
static int plan_spans(djob *job) {
  int32_t nb = job->ci.nblocks;
  const uint8_t *bstarts = job->src + job->ci.header_len;
  job->span_end = (int32_t *)malloc(sizeof(int32_t) * (size_t)nb);
  job->order = (int32_t *)malloc(sizeof(int32_t) * (size_t)nb);
  if (job->span_end == NULL || job->order == NULL ||
      ndp_blocks_by_start(bstarts, nb, job->order) != NDP_OK)
    return 0;
  for (int32_t k = 0; k < nb; k++) {
    int32_t j = job->order[k], s = span_start(job, j);
    if (s < job->data_start || s > job->srcsize) return 0;
    job->span_end[j] = k + 1 < nb ? span_start(job, job->order[k + 1]) : job->srcsize;
  }
  return 1;
}

/* Hash block j's span (just decoded: its bytes are in cache). */
static void hash_span(const djob *job, int32_t j) {
  if (job->crcs == NULL) return;
  int32_t s = span_start(job, j);
  job->crcs[j] = ndp_crc32c(0, job->src + s, (size_t)(job->span_end[j] - s));
}

static void whole_task(void *ctx, int32_t t) {
  djob *job = (djob *)ctx;
  if (atomic_load(&job->fail.failed)) return;
  int32_t j = t + (job->has_delta ? 1 : 0);
  ndp_error e = {0, {0}};
  if (decode_block(job, j, job->dst + (size_t)j * job->ci.blocksize, &e) != NDP_OK)
    ndp_failure_set(&job->fail, &e);
  else
    hash_span(job, j);
}

/* Memcpyed and special chunks are produced in 1 MiB pieces, in parallel: on a
 * fresh destination the page faults cost more than the copy or the fill. */
#define PIECE (1 << 20)

static void piece_task(void *ctx, int32_t k) {
  djob *job = (djob *)ctx;
  int32_t off = k * PIECE;
  int32_t len = job->ci.nbytes - off < PIECE ? job->ci.nbytes - off : PIECE;
  if (job->ci.special) fill_special(job, off, len, job->dst + off);
  else memcpy(job->dst + off, job->src + job->ci.header_len + off, (size_t)len);
}

static int32_t decompress_whole(const void *src, int32_t srcsize, void *dst_, int32_t dstsize,
                                int nthreads, uint32_t *crc, ndp_error *err) {
  uint8_t *dst = (uint8_t *)dst_;
  djob job;
  int rc = djob_init(&job, src, srcsize, err);
  if (rc != NDP_OK) return rc;
  const ndp_chunk_info *ci = &job.ci;
  job.srcsize = srcsize;
  int fused = crc != NULL && !ci->special && !ci->memcpyed && !ci->vlblocks &&
              ci->nbytes > 0 && dstsize >= ci->nbytes && plan_spans(&job);
  if (fused) {
    job.crcs = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)ci->nblocks);
    fused = job.crcs != NULL;
  }
  int32_t result = ci->nbytes;
  if (dstsize < ci->nbytes) {
    result = ndp_fail(err, NDP_ERR_DEST_SIZE, "destination of %d bytes, chunk holds %d",
                      (int)dstsize, (int)ci->nbytes);
  } else if (ci->nbytes == 0) {
    /* nothing to do */
  } else if (ci->special || ci->memcpyed) {
    job.dst = dst;
    ndp_parallel_for(nthreads, (int32_t)(((int64_t)ci->nbytes + PIECE - 1) / PIECE), piece_task,
                     &job);
  } else if (ci->vlblocks) {
    result = decode_vl(&job, dst, err);
  } else {
    job.dst = dst;
    job.ref = dst;
    job.stream_out = (size_t)ci->nbytes >= ndp_stream_min_bytes();
    int32_t ntasks = ci->nblocks;
    if (job.has_delta) {  /* block 0 is DELTA's reference: decode it first */
      hash_span(&job, 0);
      rc = decode_block(&job, 0, dst, err);
      ntasks--;
    }
    if (rc == NDP_OK) {
      ndp_parallel_for(nthreads, ntasks, whole_task, &job);
      if (atomic_load(&job.fail.failed))
        rc = ndp_fail(err, job.fail.err.code, "%s", job.fail.err.msg);
    }
    if (rc != NDP_OK) result = rc;
  }
  if (result >= 0 && crc != NULL) {
    if (fused) {       /* the prefix (header, starts, dictionary), then the spans in order */
      uint32_t c = ndp_crc32c(0, src, (size_t)span_start(&job, job.order[0]));
      for (int32_t k = 0; k < ci->nblocks; k++) {
        int32_t j = job.order[k];
        c = ndp_crc32c_combine(c, job.crcs[j], (size_t)(job.span_end[j] - span_start(&job, j)));
      }
      *crc = c;
    } else {
      *crc = ndp_crc32c(0, src, (size_t)srcsize);
    }
  }
  free(job.crcs);
  free(job.span_end);
  free(job.order);
  djob_free(&job);
  return result;
}

int32_t ndp_decompress(const void *src, int32_t srcsize, void *dst, int32_t dstsize,
                       int nthreads, ndp_error *err) {
  return decompress_whole(src, srcsize, dst, dstsize, nthreads, NULL, err);
}

int32_t ndp_decompress_crc(const void *src, int32_t srcsize, void *dst, int32_t dstsize,
                           int nthreads, uint32_t *crc, ndp_error *err) {
  return decompress_whole(src, srcsize, dst, dstsize, nthreads, crc, err);
}

/* ---- block subsets and item ranges ---- */

/* Make job->ref point at decoded block 0 when DELTA needs it. */
static int prepare_ref(djob *job, ndp_error *err) {
  if (!job->has_delta || job->ci.special || job->ci.memcpyed) return NDP_OK;
  uint8_t *r = (uint8_t *)malloc((size_t)job->ci.blocksize);
  if (r == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "out of memory");
  int rc = decode_block(job, 0, r, err);
  if (rc != NDP_OK) {
    free(r);
    return rc;
  }
  job->ref = r;
  return NDP_OK;
}

static void list_task(void *ctx, int32_t i) {
  djob *job = (djob *)ctx;
  if (atomic_load(&job->fail.failed)) return;
  ndp_error e = {0, {0}};
  uint8_t *out = job->dst + (size_t)i * job->ci.blocksize;
  int rc = job->needs != NULL ? decode_block_prefix(job, job->blocks[i], out, job->needs[i], &e)
                              : decode_block(job, job->blocks[i], out, &e);
  if (rc != NDP_OK) ndp_failure_set(&job->fail, &e);
}

int32_t ndp_decompress_blocks(const void *src, int32_t srcsize, const int32_t *blocks,
                              int32_t nblocks, void *dst, int32_t dstsize, int nthreads,
                              ndp_error *err) {
  return ndp_decompress_block_prefixes(src, srcsize, blocks, NULL, nblocks, dst, dstsize,
                                       nthreads, err);
}

int32_t ndp_decompress_block_prefixes(const void *src, int32_t srcsize, const int32_t *blocks,
                                      const int32_t *needs, int32_t nblocks, void *dst,
                                      int32_t dstsize, int nthreads, ndp_error *err) {
  djob job;
  int rc = djob_init(&job, src, srcsize, err);
  if (rc != NDP_OK) return rc;
  const ndp_chunk_info *ci = &job.ci;
  int32_t end = 0;
  for (int32_t i = 0; i < nblocks && rc == NDP_OK; i++) {
    if (blocks[i] < 0 || blocks[i] >= ci->nblocks)
      rc = ndp_fail(err, NDP_ERR_PARAM, "block %d out of range (chunk has %d blocks)",
                    (int)blocks[i], (int)ci->nblocks);
    else if (needs != NULL && needs[i] < 0)
      rc = ndp_fail(err, NDP_ERR_PARAM, "negative byte count %d wanted of block %d",
                    (int)needs[i], (int)blocks[i]);
    else if (ci->vlblocks)
      rc = ndp_fail(err, NDP_ERR_PARAM, "VL-block chunks can only be decoded whole");
    else {
      int64_t e = (int64_t)i * ci->blocksize + block_size(ci, blocks[i]);
      if (e > dstsize)
        rc = ndp_fail(err, NDP_ERR_DEST_SIZE, "destination of %d bytes too small for %d blocks",
                      (int)dstsize, (int)nblocks);
      if (e > end) end = (int32_t)e;
    }
  }
  if (rc == NDP_OK) rc = prepare_ref(&job, err);
  if (rc == NDP_OK) {
    job.blocks = blocks;
    job.needs = needs;
    job.dst = (uint8_t *)dst;
    ndp_parallel_for(nthreads, nblocks, list_task, &job);
    if (atomic_load(&job.fail.failed))
      rc = ndp_fail(err, job.fail.err.code, "%s", job.fail.err.msg);
  }
  if (job.ref != NULL) free((void *)job.ref);
  djob_free(&job);
  return rc == NDP_OK ? end : rc;
}

int32_t ndp_getitem(const void *src, int32_t srcsize, int32_t start, int32_t nitems, void *dst_,
                    int32_t dstsize, ndp_error *err) {
  uint8_t *dst = (uint8_t *)dst_;
  djob job;
  int rc = djob_init(&job, src, srcsize, err);
  if (rc != NDP_OK) return rc;
  const ndp_chunk_info *ci = &job.ci;
  int64_t ts = ci->typesize;
  int64_t lo = (int64_t)start * ts, hi = ((int64_t)start + nitems) * ts;
  if (start < 0 || nitems < 0 || hi > ci->nbytes)
    rc = ndp_fail(err, NDP_ERR_PARAM, "items [%d, %d) out of range (chunk has %d items)",
                  (int)start, (int)(start + (int64_t)nitems), (int)(ci->nbytes / ts));
  else if (hi - lo > dstsize)
    rc = ndp_fail(err, NDP_ERR_DEST_SIZE, "destination of %d bytes, %d needed", (int)dstsize,
                  (int)(hi - lo));
  else if (ci->vlblocks)
    rc = ndp_fail(err, NDP_ERR_PARAM, "VL-block chunks can only be decoded whole");
  if (rc == NDP_OK && hi > lo) {
    if (ci->special) fill_special(&job, (int32_t)lo, (int32_t)(hi - lo), dst);
    else if (ci->memcpyed) memcpy(dst, job.src + ci->header_len + lo, (size_t)(hi - lo));
    else rc = prepare_ref(&job, err);
    if (rc == NDP_OK && !ci->special && !ci->memcpyed) {
      uint8_t *tmp = (uint8_t *)malloc((size_t)ci->blocksize);
      if (tmp == NULL) rc = ndp_fail(err, NDP_ERR_MEMORY, "out of memory");
      for (int32_t j = (int32_t)(lo / ci->blocksize); rc == NDP_OK && (int64_t)j * ci->blocksize < hi; j++) {
        int64_t boff = (int64_t)j * ci->blocksize, bsz = block_size(ci, j);
        int64_t a = lo > boff ? lo : boff, b = hi < boff + bsz ? hi : boff + bsz;
        if (a == boff && b == boff + bsz) {
          rc = decode_block(&job, j, dst + (a - lo), err);   /* whole block: in place */
        } else {
          rc = decode_block(&job, j, tmp, err);
          if (rc == NDP_OK) memcpy(dst + (a - lo), tmp + (a - boff), (size_t)(b - a));
        }
      }
      free(tmp);
    }
  }
  if (job.ref != NULL) free((void *)job.ref);
  djob_free(&job);
  return rc == NDP_OK ? (int32_t)(hi - lo) : rc;
}

/* ---- block visitor (fused decode + reduce, reduce.c) ---- */

int ndp_visit_blocks(const void *src, int32_t srcsize, int32_t blockbytes, int32_t align,
                     ndp_want_fn want, ndp_visit_fn visit, void *ctx, ndp_error *err) {
  djob job;
  int rc = djob_init(&job, src, srcsize, err);
  if (rc != NDP_OK) return rc;
  const ndp_chunk_info *ci = &job.ci;
  if (blockbytes <= 0 || ci->nbytes % blockbytes != 0)
    rc = ndp_fail(err, NDP_ERR_PARAM, "chunk of %d bytes is not a whole number of %d-byte blocks",
                  (int)ci->nbytes, (int)blockbytes);
  else if (ci->vlblocks)
    rc = ndp_fail(err, NDP_ERR_PARAM, "VL-block chunks can only be decoded whole");
  else if (!ci->special && !ci->memcpyed && ci->blocksize != blockbytes)
    rc = ndp_fail(err, NDP_ERR_FORMAT, "chunk blocks hold %d bytes, the array's blocks %d",
                  (int)ci->blocksize, (int)blockbytes);
  if (rc == NDP_OK) rc = prepare_ref(&job, err);
  uint8_t *buf = NULL;
  if (rc == NDP_OK && ci->nbytes > 0) {
    buf = ndp_scratch(2, (size_t)blockbytes);
    if (buf == NULL) rc = ndp_fail(err, NDP_ERR_MEMORY, "cannot allocate a block buffer");
  }
  int32_t nb = rc == NDP_OK ? ci->nbytes / blockbytes : 0;
  for (int32_t j = 0; j < nb && rc == NDP_OK; j++) {
    if (!want(ctx, j)) continue;
    const uint8_t *data = buf;
    int32_t off = j * blockbytes;
    if (ci->special) {
      fill_special(&job, off, blockbytes, buf);
    } else if (ci->memcpyed) {
      const uint8_t *p = job.src + ci->header_len + off;
      if (align > 1 && (uintptr_t)p % (uintptr_t)align != 0) memcpy(buf, p, (size_t)blockbytes);
      else data = p;
    } else {
      rc = decode_block(&job, j, buf, err);
    }
    if (rc == NDP_OK) rc = visit(ctx, j, data, err);
  }
  if (job.ref != NULL) free((void *)job.ref);
  djob_free(&job);
  return rc;
}

/* ---- item runs (sub-block reads) ---- */

/* One run of items [lo, hi) of a block, written at out. */
typedef struct {
  int32_t lo, hi;
  uint8_t *out;
} item_run;

#define RUN_BATCH 8192

/* Runs of items of full regular block j (split, shuffle only): raw streams give their
 * bytes where they lie, runs and zero streams are expanded, compressed streams are
 * decoded once (each into its plane of a per-thread buffer, up to the last run); then
 * each run is unshuffled from the planes (the SIMD kernel for runs of 32 items or more,
 * item by item below). */
static int read_runs(const djob *job, int32_t j, const item_run *runs, int32_t nr,
                     ndp_error *err) {
  int32_t ts = job->typesize, neblock = job->ci.blocksize / ts, pos, csize = 0;
  int rc = block_start(job, j, &pos, err);
  if (rc != NDP_OK) return rc;
  uint8_t *buf = ndp_scratch(2, (size_t)job->ci.blocksize);
  if (buf == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "cannot allocate stream buffers");
  int32_t want = 0;                         /* streams are decoded up to the last run */
  for (int32_t r = 0; r < nr; r++) want = runs[r].hi > want ? runs[r].hi : want;
  const uint8_t *planes[256];
  for (int s = 0; s < ts; s++) {
    uint8_t *o = buf + (size_t)s * neblock;
    const uint8_t *p = NULL;
    rc = next_stream(job, j, s, &pos, &csize, &p, err);
    if (rc != NDP_OK) return rc;
    planes[s] = o;
    if (csize <= 0) memset(o, csize == 0 ? 0 : -csize, (size_t)want);
    else if (csize == neblock) planes[s] = p;                 /* raw: read in place */
    else if ((rc = decode_stream(job, j, s, p, csize, o, neblock, want, err)) != NDP_OK)
      return rc;
  }
  const ndp_filter_kernels *k = ndp_filters();
  const uint8_t *at[256];
  for (int32_t r = 0; r < nr; r++) {
    int32_t lo = runs[r].lo, len = runs[r].hi - runs[r].lo;
    uint8_t *o = runs[r].out;
    if (len >= 32) {
      for (int s = 0; s < ts; s++) at[s] = planes[s] + lo;
      k->unshuffle_planes((size_t)ts, (size_t)len, at, o);
      continue;
    }
    for (int32_t e = 0; e < len; e++)
      for (int s = 0; s < ts; s++) o[(size_t)e * ts + s] = planes[s][lo + e];
  }
  return NDP_OK;
}

/* Check run i (in range, inside one block, room in dst): its byte offset `lo`, length
 * `len` and block `j`. */
static int check_run(const ndp_chunk_info *ci, const int64_t *starts, const int32_t *counts,
                     int32_t i, int64_t written, int64_t dstsize, int64_t *lo, int64_t *len,
                     int32_t *j, ndp_error *err) {
  int64_t ts = ci->typesize;
  *lo = starts[i] * ts;
  *len = (int64_t)counts[i] * ts;
  if (starts[i] < 0 || counts[i] < 0 || *lo + *len > ci->nbytes)
    return ndp_fail(err, NDP_ERR_PARAM, "run %d: items [%lld, %lld) out of range (chunk has %d)",
                    (int)i, (long long)starts[i], (long long)(starts[i] + counts[i]),
                    (int)(ci->nbytes / ts));
  if (written + *len > dstsize)
    return ndp_fail(err, NDP_ERR_DEST_SIZE, "destination of %lld bytes too small",
                    (long long)dstsize);
  *j = *len > 0 ? (int32_t)(*lo / ci->blocksize) : 0;
  if (*len > 0 && *lo + *len > (int64_t)*j * ci->blocksize + block_size(ci, *j))
    return ndp_fail(err, NDP_ERR_PARAM, "run %d crosses a block boundary", (int)i);
  return NDP_OK;
}

int64_t ndp_getitems(const void *src, int32_t srcsize, const int64_t *starts,
                     const int32_t *counts, int32_t nruns, void *dst_, int64_t dstsize,
                     ndp_error *err) {
  uint8_t *dst = (uint8_t *)dst_;
  djob job;
  int rc = djob_init(&job, src, srcsize, err);
  if (rc != NDP_OK) return rc;
  const ndp_chunk_info *ci = &job.ci;
  int64_t ts = ci->typesize, written = 0;
  int partial = job.plain_shuffle;   /* runs read without decoding whole blocks */
  if (ci->vlblocks) rc = ndp_fail(err, NDP_ERR_PARAM, "VL-block chunks can only be decoded whole");
  if (rc == NDP_OK && !partial) rc = prepare_ref(&job, err);
  uint8_t *whole = NULL;
  int32_t whole_j = -1;                      /* the block held in `whole` */
  item_run *batch = NULL;
  if (rc == NDP_OK && partial && nruns > 0) {
    batch = (item_run *)malloc(sizeof(item_run) * (size_t)(nruns < RUN_BATCH ? nruns : RUN_BATCH));
    if (batch == NULL) rc = ndp_fail(err, NDP_ERR_MEMORY, "out of memory");
  }
  int32_t i = 0;
  while (i < nruns && rc == NDP_OK) {
    int64_t lo, len;
    int32_t j;
    rc = check_run(ci, starts, counts, i, written, dstsize, &lo, &len, &j, err);
    if (rc != NDP_OK) break;
    if (len == 0) {
      i++;
      continue;
    }
    int64_t boff = (int64_t)j * ci->blocksize, bsz = block_size(ci, j);
    if (partial && bsz == ci->blocksize) {
      /* this run and the next ones in the same block, their streams decoded once */
      int32_t nb = 0;
      for (;;) {
        batch[nb].lo = (int32_t)((lo - boff) / ts);
        batch[nb].hi = (int32_t)((lo - boff + len) / ts);
        batch[nb].out = dst + written;
        nb++;
        written += len;
        i++;
        if (nb == RUN_BATCH || i == nruns) break;
        int32_t j2;
        rc = check_run(ci, starts, counts, i, written, dstsize, &lo, &len, &j2, err);
        if (rc != NDP_OK || len == 0 || j2 != j) break;
      }
      if (rc == NDP_OK) rc = read_runs(&job, j, batch, nb, err);
      continue;
    }
    if (ci->special) {
      fill_special(&job, (int32_t)lo, (int32_t)len, dst + written);
    } else if (ci->memcpyed) {
      memcpy(dst + written, job.src + ci->header_len + lo, (size_t)len);
    } else {
      if (whole == NULL) whole = (uint8_t *)malloc((size_t)ci->blocksize);
      if (whole == NULL) rc = ndp_fail(err, NDP_ERR_MEMORY, "out of memory");
      else if (j != whole_j) rc = decode_block(&job, j, whole, err);  /* once per block */
      whole_j = rc == NDP_OK ? j : -1;
      if (rc == NDP_OK) memcpy(dst + written, whole + (lo - boff), (size_t)len);
    }
    written += len;
    i++;
  }
  free(whole);
  free(batch);
  if (job.ref != NULL) free((void *)job.ref);
  djob_free(&job);
  return rc == NDP_OK ? written : rc;
}

/* ---- one chunk's decoder for other modules (chunk.h) ---- */

int ndp_djob_open(ndp_djob *job, const void *src, int32_t srcsize, ndp_error *err) {
  int rc = djob_init(job, src, srcsize, err);
  if (rc == NDP_OK && job->ci.vlblocks)
    rc = ndp_fail(err, NDP_ERR_PARAM, "VL-block chunks can only be decoded whole");
  if (rc == NDP_OK) rc = prepare_ref(job, err);
  if (rc != NDP_OK) {
    if (job->ref != NULL) free((void *)job->ref);
    djob_free(job);
  }
  return rc;
}

int ndp_djob_block(const ndp_djob *job, int32_t j, int32_t blockbytes, uint8_t *out,
                   int32_t need, ndp_error *err) {
  const ndp_chunk_info *ci = &job->ci;
  if (ci->special || ci->memcpyed) {
    int64_t off = (int64_t)j * blockbytes;
    if (j < 0 || blockbytes <= 0 || off + blockbytes > ci->nbytes)
      return ndp_fail(err, NDP_ERR_PARAM, "block %d of %d bytes outside a chunk of %d bytes",
                      (int)j, (int)blockbytes, (int)ci->nbytes);
    int32_t n = need < blockbytes ? need : blockbytes;
    if (n <= 0) return NDP_OK;
    if (ci->special) fill_special(job, (int32_t)off, n, out);
    else memcpy(out, job->src + ci->header_len + off, (size_t)n);
    return NDP_OK;
  }
  if (blockbytes != ci->blocksize)
    return ndp_fail(err, NDP_ERR_FORMAT, "chunk blocks hold %d bytes, the array's %d",
                    (int)ci->blocksize, (int)blockbytes);
  if (j < 0 || j >= ci->nblocks)
    return ndp_fail(err, NDP_ERR_PARAM, "block %d out of range (chunk has %d blocks)", (int)j,
                    (int)ci->nblocks);
  return decode_block_prefix(job, j, out, need, err);
}

void ndp_djob_close(ndp_djob *job) {
  if (job->ref != NULL) free((void *)job->ref);
  job->ref = NULL;
  djob_free(job);
}
