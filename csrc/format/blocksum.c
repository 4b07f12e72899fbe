/* Per-block checksums (docs/storage.md, "Block checksums"): what a reader that decodes
 * only some blocks of a chunk can check without reading the rest of it.
 *
 * A chunk's entry has nblocks + 1 crc32c values: entry[0] covers the chunk's prefix
 * (bytes [0, data start): header, block starts and dictionary, everything a decoder
 * trusts before it reaches a block), entry[1 + j] block j's bytes as they lie in the
 * chunk: the streams of a regular block (each stream's size field and payload, walked
 * as the decoder walks them), the blocksize bytes at j * blocksize of a memcpyed
 * chunk.  Special and VL-block chunks have no entry (they are tiny, or decoded whole).
 *
 * A block's bytes are found by walking its streams, not by sorting the starts, so
 * a check costs O(streams) per wanted block whatever the chunk's block count. */
#include <stdlib.h>

#include "chunk.h"

/* Where the chunk's blocks begin: after the header and block starts, and the
 * dictionary (4-byte size + bytes) when the chunk has one; -1 when malformed. */
static int32_t data_start(const uint8_t *src, const ndp_chunk_info *ci) {
  if (ci->memcpyed) return ci->header_len;
  int64_t d = ci->header_len + 4 * (int64_t)ci->nblocks;
  if (d > ci->cbytes) return -1;
  if (ci->use_dict) {
    if (ci->cbytes - d < 4) return -1;
    int32_t dsize = ndp_rd32(src + d);
    if (dsize <= 0 || dsize > ci->cbytes - d - 4) return -1;
    d += 4 + dsize;
  }
  return (int32_t)d;
}

/* Block j's bytes: [*start, *start + *len) of the chunk.  NDP_ERR_FORMAT when its
 * start or a stream lies outside the chunk (the decoder would refuse it too). */
static int block_bytes(const uint8_t *src, const ndp_chunk_info *ci, int32_t dstart,
                       int32_t j, int32_t *start, int32_t *len, ndp_error *err) {
  int32_t off = j * ci->blocksize;
  int32_t bsize = ci->nbytes - off < ci->blocksize ? ci->nbytes - off : ci->blocksize;
  if (ci->memcpyed) {
    *start = ci->header_len + off;
    *len = bsize;
    return NDP_OK;
  }
  int32_t pos = ndp_rd32(src + ci->header_len + 4 * j);
  if (pos < dstart || pos >= ci->cbytes)
    return ndp_fail(err, NDP_ERR_FORMAT, "block %d starts at %d, outside the data area "
                    "[%d, %d)", (int)j, (int)pos, (int)dstart, (int)ci->cbytes);
  *start = pos;
  int nstreams = (!ci->dont_split && bsize == ci->blocksize) ? ci->typesize : 1;
  for (int s = 0; s < nstreams; s++) {
    int32_t csize = 0;
    const uint8_t *data = NULL;
    int rc = ndp_next_stream(src, ci->cbytes, j, s, &pos, &csize, &data, err);
    if (rc != NDP_OK) return rc;
  }
  *len = pos - *start;
  return NDP_OK;
}

/* Whether the chunk kind has entries; fills *ci and *dstart. */
static int has_entry(const uint8_t *src, int32_t size, ndp_chunk_info *ci, int32_t *dstart) {
  if (ndp_chunk_parse(src, size, ci, NULL) != NDP_OK) return 0;
  if (ci->special || ci->vlblocks || ci->nbytes == 0 || ci->nblocks <= 0) return 0;
  *dstart = data_start(src, ci);
  return *dstart >= 0;
}

int32_t ndp_block_sums(const void *chunk, int32_t size, uint32_t *out, int32_t cap,
                       uint32_t *chunk_crc, ndp_error *err) {
  const uint8_t *src = (const uint8_t *)chunk;
  if (src == NULL || size < 0 || (cap > 0 && out == NULL))
    return ndp_fail(err, NDP_ERR_PARAM, "block_sums: invalid arguments");
  ndp_chunk_info ci;
  int32_t dstart = 0;
  if (!has_entry(src, size, &ci, &dstart)) {
    if (chunk_crc != NULL) *chunk_crc = ndp_crc32c(0, src, (size_t)size);
    return 0;
  }
  if (out == NULL && chunk_crc == NULL) return ci.nblocks + 1;   /* the count alone */
  if (cap < ci.nblocks + 1)
    return ndp_fail(err, NDP_ERR_DEST_SIZE, "block_sums: room for %d entries, the chunk "
                    "needs %d", (int)cap, (int)ci.nblocks + 1);
  int32_t *starts = (int32_t *)malloc(sizeof(int32_t) * 2 * (size_t)ci.nblocks);
  if (starts == NULL) return ndp_fail(err, NDP_ERR_MEMORY, "block_sums: out of memory");
  int32_t *lens = starts + ci.nblocks;
  int32_t n;
  out[0] = ndp_crc32c(0, src, (size_t)dstart);
  for (int32_t j = 0; j < ci.nblocks; j++) {
    if (block_bytes(src, &ci, dstart, j, &starts[j], &lens[j], NULL) != NDP_OK) {
      free(starts);                   /* not a chunk a reader decodes by blocks */
      if (chunk_crc != NULL) *chunk_crc = ndp_crc32c(0, src, (size_t)size);
      return 0;
    }
    out[1 + j] = ndp_crc32c(0, src + starts[j], (size_t)lens[j]);
  }
  n = ci.nblocks + 1;
  if (chunk_crc != NULL) {
    /* the chunk's crc joined from the entries when the blocks tile it in order (how
     * every encoder lays them out), else hashed whole */
    int tiles = ci.cbytes == size;
    int32_t at = dstart;
    for (int32_t j = 0; j < ci.nblocks && tiles; j++) {
      tiles = starts[j] == at;
      at += lens[j];
    }
    if (tiles && at == size) {
      uint32_t c = out[0];
      for (int32_t j = 0; j < ci.nblocks; j++) c = ndp_crc32c_combine(c, out[1 + j], (size_t)lens[j]);
      *chunk_crc = c;
    } else {
      *chunk_crc = ndp_crc32c(0, src, (size_t)size);
    }
  }
  free(starts);
  return n;
}

static int mismatch(ndp_error *err, int32_t j, uint32_t got, uint32_t want) {
  if (j < 0)
    return ndp_fail(err, NDP_ERR_FORMAT, "checksum mismatch in the chunk's header and block "
                    "starts (crc32c %08x, the record says %08x)", (unsigned)got, (unsigned)want);
  return ndp_fail(err, NDP_ERR_FORMAT, "block %d: checksum mismatch (crc32c %08x, the record "
                  "says %08x)", (int)j, (unsigned)got, (unsigned)want);
}

int ndp_block_sums_check(const void *chunk, int32_t size, const int32_t *blocks, int32_t n,
                         const uint32_t *entry, int32_t nentry, int check_prefix,
                         ndp_error *err) {
  const uint8_t *src = (const uint8_t *)chunk;
  if (src == NULL || entry == NULL || n < 0 || (n > 0 && blocks == NULL))
    return ndp_fail(err, NDP_ERR_PARAM, "block_sums_check: invalid arguments");
  ndp_chunk_info ci;
  int32_t dstart = 0;
  if (!has_entry(src, size, &ci, &dstart) || nentry != ci.nblocks + 1)
    return ndp_fail(err, NDP_ERR_FORMAT, "the chunk does not match its block checksums "
                    "(%d recorded, the chunk has %d blocks)", (int)nentry - 1,
                    (int)ci.nblocks);
  if (check_prefix) {
    uint32_t got = ndp_crc32c(0, src, (size_t)dstart);
    if (got != entry[0]) return mismatch(err, -1, got, entry[0]);
  }
  int has_delta = 0;
  for (int i = 0; i < NDP_NFILTERS; i++) has_delta |= ci.filters[i] == NDP_DELTA;
  for (int32_t i = 0; i < n + has_delta; i++) {
    int32_t j = i < n ? blocks[i] : 0;          /* DELTA decodes block 0 as reference */
    if (j < 0 || j >= ci.nblocks)
      return ndp_fail(err, NDP_ERR_PARAM, "block %d out of range [0, %d)", (int)j,
                      (int)ci.nblocks);
    int32_t start, len;
    int rc = block_bytes(src, &ci, dstart, j, &start, &len, err);
    if (rc != NDP_OK) return rc;
    uint32_t got = ndp_crc32c(0, src + start, (size_t)len);
    if (got != entry[1 + j]) return mismatch(err, j, got, entry[1 + j]);
  }
  return NDP_OK;
}
