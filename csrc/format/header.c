/* Chunk headers: parsing and validation (FORMAT.md 1.1-1.5), the automatic
 * blocksize and split rules (1.10), special-value chunks (1.4), and the blocks of a
 * chunk in the order they lie. */
#include <stdlib.h>

#include "chunk.h"

#include "../codecs/codecs.h"

ndp_cparams ndp_cparams_default(void) {
  ndp_cparams cp;
  memset(&cp, 0, sizeof cp);
  cp.compcode = NDP_ZSTD;
  cp.clevel = 5;
  cp.typesize = 8;
  cp.nthreads = 1;
  cp.splitmode = NDP_AUTO_SPLIT;
  cp.filters[5] = NDP_SHUFFLE;
  return cp;
}

static int32_t ceil_div(int32_t a, int32_t b) { return (int32_t)(((int64_t)a + b - 1) / b); }

int ndp_chunk_parse(const void *src_, int32_t srcsize, ndp_chunk_info *ci, ndp_error *err) {
  const uint8_t *src = (const uint8_t *)src_;
  memset(ci, 0, sizeof *ci);
  if (src == NULL || srcsize < NDP_MIN_HEADER)
    return ndp_fail(err, NDP_ERR_FORMAT,
                    "chunk is %d bytes, shorter than the 16-byte minimum header", (int)srcsize);
  ci->version = src[0];
  ci->versionlz = src[1];
  ci->flags = src[2];
  ci->typesize = src[3];
  ci->nbytes = ndp_rd32(src + 4);
  ci->blocksize = ndp_rd32(src + 8);
  ci->cbytes = ndp_rd32(src + 12);
  if (ci->version < 1 || ci->version > 6)
    return ndp_fail(err, NDP_ERR_FORMAT, "unsupported chunk format version %d (1..6 known)",
                    ci->version);
  if (ci->typesize == 0) return ndp_fail(err, NDP_ERR_FORMAT, "chunk header has typesize 0");
  ci->extended = (ci->flags & 0x05) == 0x05;
  ci->header_len = ci->extended ? NDP_EXT_HEADER : NDP_MIN_HEADER;
  if (ci->nbytes < 0 || ci->nbytes > NDP_MAX_BUFFERSIZE)
    return ndp_fail(err, NDP_ERR_FORMAT, "chunk header has invalid nbytes %d", (int)ci->nbytes);
  if (ci->cbytes < ci->header_len)
    return ndp_fail(err, NDP_ERR_FORMAT, "chunk header has cbytes %d, less than its %d-byte header",
                    (int)ci->cbytes, ci->header_len);
  if (ci->cbytes > srcsize)
    return ndp_fail(err, NDP_ERR_FORMAT,
                    "chunk is truncated: header says %d bytes, only %d available",
                    (int)ci->cbytes, (int)srcsize);
  ci->memcpyed = (ci->flags & 0x02) != 0;
  ci->dont_split = (ci->flags & 0x10) != 0;

  int format = ci->flags >> 5;
  if (ci->extended) {
    memcpy(ci->filters, src + 16, NDP_NFILTERS);
    memcpy(ci->filters_meta, src + 24, NDP_NFILTERS);
    if (ci->version == 3) ci->filters[5] = ci->filters_meta[5] = 0;
    int b2flags = src[31];
    ci->vlblocks = (src[30] & 0x01) != 0;
    ci->use_dict = (b2flags & 0x01) != 0;
    ci->special = (b2flags >> 4) & 0x07;
    ci->compcode_meta = src[23];
    if (b2flags & 0x08)
      return ndp_fail(err, NDP_ERR_FORMAT, "lazy chunks are in-memory only and cannot be decoded");
    if (ci->special > NDP_SPECIAL_UNINIT)
      return ndp_fail(err, NDP_ERR_FORMAT, "chunk has reserved special-value code %d",
                      ci->special);
    ci->compcode = format == 6 ? src[22] : ndp_codec_from_format(format);
  } else {
    /* Blosc1-style header: the pipeline is in the flag bits. */
    if (ci->flags & 0x08) ci->filters[4] = NDP_DELTA;
    if (ci->flags & 0x01) ci->filters[5] = ci->typesize > 1 ? NDP_SHUFFLE : 0;
    else if (ci->flags & 0x04) ci->filters[5] = NDP_BITSHUFFLE;
    ci->compcode = ndp_codec_from_format(format);
  }
  if (ci->special != NDP_SPECIAL_NONE) {
    int32_t t = ci->cbytes - NDP_EXT_HEADER;
    if (ci->special == NDP_SPECIAL_VALUE) {
      if (t <= 0)
        return ndp_fail(err, NDP_ERR_FORMAT, "repeated-value chunk carries no value bytes");
      if (ci->nbytes % t != 0)
        return ndp_fail(err, NDP_ERR_FORMAT,
                        "repeated-value chunk: nbytes %d is not a multiple of the value size %d",
                        (int)ci->nbytes, (int)t);
    } else {
      if (t != 0)
        return ndp_fail(err, NDP_ERR_FORMAT, "special chunk has cbytes %d, expected 32",
                        (int)ci->cbytes);
      if (ci->special == NDP_SPECIAL_NAN) {
        if (ci->typesize != 4 && ci->typesize != 8)
          return ndp_fail(err, NDP_ERR_FORMAT, "NaN chunk needs typesize 4 or 8, has %d",
                          ci->typesize);
        if (ci->nbytes % ci->typesize != 0)
          return ndp_fail(err, NDP_ERR_FORMAT, "NaN chunk: nbytes %d not a multiple of %d",
                          (int)ci->nbytes, ci->typesize);
      }
    }
  }
  if (ci->vlblocks) {
    if (ci->blocksize <= 0 || (ci->nbytes > 0 && ci->blocksize > ci->nbytes))
      return ndp_fail(err, NDP_ERR_FORMAT, "VL-block chunk has invalid block count %d",
                      (int)ci->blocksize);
    ci->nblocks = ci->blocksize;
    if (ci->special || ci->memcpyed)
      return ndp_fail(err, NDP_ERR_FORMAT, "VL-block chunk cannot be special or memcpyed");
  } else {
    if (ci->blocksize <= 0 && ci->nbytes > 0)
      return ndp_fail(err, NDP_ERR_FORMAT, "chunk header has blocksize %d", (int)ci->blocksize);
    if (ci->blocksize > NDP_MAX_BLOCKSIZE)
      return ndp_fail(err, NDP_ERR_FORMAT, "chunk header has blocksize %d, above the maximum",
                      (int)ci->blocksize);
    if (ci->nbytes > 0 && ci->blocksize > ci->nbytes) ci->blocksize = ci->nbytes;
    ci->nblocks = ci->nbytes > 0 ? ceil_div(ci->nbytes, ci->blocksize) : 0;
    ci->leftover = ci->nbytes > 0 ? ci->nbytes % ci->blocksize : 0;
  }
  if (ci->special != NDP_SPECIAL_NONE) return NDP_OK;
  if (ci->memcpyed) {
    if (ci->cbytes != ci->nbytes + ci->header_len)
      return ndp_fail(err, NDP_ERR_FORMAT,
                      "memcpyed chunk has cbytes %d, expected nbytes + header = %d",
                      (int)ci->cbytes, (int)(ci->nbytes + ci->header_len));
    return NDP_OK;
  }
  if (ci->nbytes == 0) return NDP_OK;
  if (ci->compcode < 0)
    return ndp_fail(err, NDP_ERR_FORMAT, "chunk has reserved codec format code %d", format);
  if ((int64_t)ci->header_len + 4 * (int64_t)ci->nblocks > ci->cbytes)
    return ndp_fail(err, NDP_ERR_FORMAT,
                    "chunk is truncated: %d block starts do not fit in %d bytes",
                    (int)ci->nblocks, (int)ci->cbytes);
  return NDP_OK;
}

/* ---- automatic blocksize (FORMAT.md 1.10) ---- */

int ndp_split_rule(const ndp_cparams *cp, int32_t typesize, int32_t bs) {
  switch (cp->splitmode) {
    case NDP_ALWAYS_SPLIT: return 1;
    case NDP_NEVER_SPLIT: return 0;
    default: break;
  }
  int codec_ok = cp->compcode == NDP_BLOSCLZ || cp->compcode == NDP_LZ4 ||
                 (cp->compcode == NDP_ZSTD && cp->clevel <= 5);
  int has_shuffle = 0;
  for (int i = 0; i < NDP_NFILTERS; i++) has_shuffle |= cp->filters[i] == NDP_SHUFFLE;
  return codec_ok && has_shuffle && typesize <= 16 && bs / typesize >= 32;
}

int32_t ndp_auto_blocksize(const ndp_cparams *cp, int32_t nbytes) {
  const int32_t L1 = 32 * 1024;
  int32_t ts = cp->typesize;
  if (nbytes < ts) return 1;
  int64_t bs = nbytes;
  if (cp->blocksize > 0) {
    bs = cp->blocksize;
  } else {
    int hcr = cp->compcode == NDP_LZ4HC || cp->compcode == NDP_ZLIB || cp->compcode == NDP_ZSTD;
    if (nbytes >= L1) {
      bs = hcr ? 2 * L1 : L1;
      switch (cp->clevel) {
        case 0: bs /= 4; break;
        case 1: bs /= 2; break;
        case 2: break;
        case 3: bs *= 2; break;
        case 4: case 5: bs *= 4; break;
        case 6: case 7: case 8: bs *= 8; break;
        default: bs *= hcr ? 16 : 8; break;
      }
    }
    if (cp->clevel > 0 && ndp_split_rule(cp, ts, nbytes)) {
      int64_t k;
      switch (cp->clevel) {
        case 1: case 2: case 3: k = 32 * 1024; break;
        case 4: case 5: case 6: k = 64 * 1024; break;
        case 7: k = 128 * 1024; break;
        case 8: k = 256 * 1024; break;
        default: k = 512 * 1024; break;
      }
      bs = k * ts;
      if (bs > 4 * 1024 * 1024) bs = 4 * 1024 * 1024;
      if (bs < 32 * 1024) bs = 32 * 1024;
    }
  }
  if (bs > nbytes) bs = nbytes;
  if (bs > ts) bs -= bs % ts;
  return (int32_t)bs;
}

/* ---- special-value chunks ---- */

void ndp_write_header(uint8_t *h, int version, int flags, int32_t typesize, int32_t nbytes,
                      int32_t blocksize, int32_t cbytes) {
  memset(h, 0, NDP_EXT_HEADER);
  h[0] = (uint8_t)version;
  h[1] = 1;
  h[2] = (uint8_t)flags;
  h[3] = (uint8_t)(typesize > NDP_MAX_TYPESIZE ? 1 : typesize);
  ndp_wr32(h + 4, nbytes);
  ndp_wr32(h + 8, blocksize);
  ndp_wr32(h + 12, cbytes);
}

int32_t ndp_chunk_special(int special, int32_t nbytes, int32_t typesize, int32_t blocksize,
                          const void *value, void *dst_, int32_t dstsize, ndp_error *err) {
  uint8_t *dst = (uint8_t *)dst_;
  if (special < NDP_SPECIAL_ZERO || special > NDP_SPECIAL_UNINIT)
    return ndp_fail(err, NDP_ERR_PARAM, "unknown special value %d", special);
  if (nbytes < 0 || nbytes > NDP_MAX_BUFFERSIZE)
    return ndp_fail(err, NDP_ERR_PARAM, "nbytes %d out of range", (int)nbytes);
  if (typesize < 1) return ndp_fail(err, NDP_ERR_PARAM, "typesize must be >= 1");
  if (blocksize < 0) return ndp_fail(err, NDP_ERR_PARAM, "blocksize must be >= 0");
  if (special != NDP_SPECIAL_ZERO && special != NDP_SPECIAL_UNINIT && nbytes % typesize != 0)
    return ndp_fail(err, NDP_ERR_PARAM, "nbytes %d is not a multiple of typesize %d",
                    (int)nbytes, (int)typesize);
  if (special == NDP_SPECIAL_NAN && typesize != 4 && typesize != 8)
    return ndp_fail(err, NDP_ERR_PARAM, "NaN chunks need typesize 4 or 8, got %d", (int)typesize);
  if (special == NDP_SPECIAL_VALUE && value == NULL)
    return ndp_fail(err, NDP_ERR_PARAM, "a repeated-value chunk needs a value");
  int32_t cbytes = NDP_EXT_HEADER + (special == NDP_SPECIAL_VALUE ? typesize : 0);
  if (dstsize < cbytes)
    return ndp_fail(err, NDP_ERR_DEST_SIZE, "special chunk needs %d bytes, %d given",
                    (int)cbytes, (int)dstsize);
  if (blocksize == 0 || blocksize > nbytes) blocksize = nbytes;
  ndp_write_header(dst, 5, 0x05, typesize, nbytes, blocksize, cbytes);
  dst[31] = (uint8_t)(special << 4);
  if (special == NDP_SPECIAL_VALUE) memcpy(dst + NDP_EXT_HEADER, value, (size_t)typesize);
  return cbytes;
}

/* Stream s of block j at *pos: its csize (0: zeros, < 0: a run of the byte -csize,
 * > 0: `*data` holds csize bytes), every length checked; *pos moves past it. */
int ndp_next_stream(const uint8_t *src, int32_t cbytes, int32_t j, int s, int32_t *pos,
                    int32_t *csize, const uint8_t **data, ndp_error *err) {
  if (cbytes - *pos < 4)
    return ndp_fail(err, NDP_ERR_FORMAT, "block %d stream %d: size field past the end",
                    (int)j, s);
  *csize = ndp_rd32(src + *pos);
  *pos += 4;
  if (*csize < 0) {
    if (*csize < -255 || *pos >= cbytes || !(src[*pos] & 0x01))
      return ndp_fail(err, NDP_ERR_FORMAT, "block %d stream %d: invalid run (csize %d)",
                      (int)j, s, (int)*csize);
    *pos += 1;
  } else if (*csize > cbytes - *pos) {
    return ndp_fail(err, NDP_ERR_FORMAT,
                    "block %d stream %d: %d bytes declared, only %d left in the chunk",
                    (int)j, s, (int)*csize, (int)(cbytes - *pos));
  } else {
    *data = src + *pos;
    *pos += *csize;
  }
  return NDP_OK;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

int ndp_blocks_by_start(const uint8_t *bstarts, int32_t n, int32_t *order) {
  uint64_t *keys = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)(n > 0 ? n : 1));
  if (keys == NULL) return NDP_ERR_MEMORY;
  int sorted = 1;
  for (int32_t j = 0; j < n; j++) {    /* (start, j): unique keys, start in the high bits */
    keys[j] = ((uint64_t)(uint32_t)ndp_rd32(bstarts + 4 * j) << 32) | (uint32_t)j;
    sorted &= j == 0 || keys[j - 1] <= keys[j];
  }
  if (!sorted) qsort(keys, (size_t)n, sizeof(uint64_t), cmp_u64);
  for (int32_t k = 0; k < n; k++) order[k] = (int32_t)(keys[k] & 0xffffffffu);
  free(keys);
  return NDP_OK;
}
