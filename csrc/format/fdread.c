/* Reading a subset of a chunk's blocks straight from a file (FORMAT.md 1.5-1.7).
 *
 * A chunk stored in a file is read with positioned reads: its header and block
 * starts, the dictionary, then only the byte spans of the wanted blocks (and block 0
 * when DELTA needs it as reference).  The result is a valid, smaller chunk: the
 * spans are packed one after another, the wanted blocks' starts are rewritten to
 * their new positions, the other blocks' starts point at a wanted block (they must
 * not be decoded) and cbytes is the reduced size.  Every start read from the file
 * is checked against cbytes before it is used; anything unexpected makes the
 * function decline (return 0) so that the caller reads the chunk whole and the
 * regular decoder reports the problem. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "chunk.h"

/* Read exactly n bytes at pos; 0 on success, -1 on error or end of file. */
static int pread_full(int fd, uint8_t *buf, int64_t n, int64_t pos) {
  while (n > 0) {
    ssize_t r = pread(fd, buf, (size_t)n, (off_t)pos);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    buf += r;
    n -= r;
    pos += r;
  }
  return 0;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

typedef struct {
  int32_t start, end, at;     /* span [start, end) of the chunk, packed at `at` */
} span;

static int cmp_span(const void *a, const void *b) {
  return cmp_i32(&((const span *)a)->start, &((const span *)b)->start);
}

/* The packed span holding chunk position s (spans sorted, s inside one). */
static const span *find_span(const span *sp, int32_t n, int32_t s) {
  int32_t lo = 0, hi = n - 1;
  while (lo < hi) {
    int32_t mid = (lo + hi + 1) / 2;
    if (sp[mid].start <= s) lo = mid; else hi = mid - 1;
  }
  return &sp[lo];
}

int64_t ndp_fd_read_blocks(int fd, int64_t pos, int32_t nblocks, int32_t min_cbytes,
                           const int32_t *numbers, int32_t n, void *buf_, int64_t cap,
                           int64_t *needed, ndp_error *err) {
  return ndp_fd_read_blocks_checked(fd, pos, nblocks, min_cbytes, numbers, n, buf_, cap,
                                    needed, NULL, 0, err);
}

int64_t ndp_fd_read_blocks_checked(int fd, int64_t pos, int32_t nblocks, int32_t min_cbytes,
                                   const int32_t *numbers, int32_t n, void *buf_, int64_t cap,
                                   int64_t *needed, const uint32_t *entry, int32_t nentry,
                                   ndp_error *err) {
  uint8_t *buf = (uint8_t *)buf_;
  *needed = 0;
  if (fd < 0 || pos < 0 || nblocks <= 0 || n < 0 || (n > 0 && numbers == NULL) || buf == NULL)
    return ndp_fail(err, NDP_ERR_PARAM, "fd_read_blocks: invalid arguments");
  int64_t hend = NDP_EXT_HEADER + 4 * (int64_t)nblocks;
  if (hend > cap) {
    *needed = hend;
    return 0;
  }
  for (int32_t i = 0; i < n; i++)
    if (numbers[i] < 0 || numbers[i] >= nblocks)
      return ndp_fail(err, NDP_ERR_PARAM, "block %d out of range [0, %d)", (int)numbers[i],
                      (int)nblocks);
  /* header and block starts in one read (declines if the chunk is shorter) */
  if (pread_full(fd, buf, hend, pos) != 0) return 0;
  ndp_chunk_info ci;
  int32_t cbytes = ndp_rd32(buf + 12);
  /* the parser reads the 32 header bytes only; cbytes is checked against hend below */
  if (cbytes < hend || ndp_chunk_parse(buf, cbytes, &ci, NULL) != NDP_OK) return 0;
  if (!ci.extended || ci.special || ci.memcpyed || ci.vlblocks || ci.nblocks != nblocks ||
      ci.cbytes < min_cbytes)
    return 0;
  int has_delta = 0;
  for (int i = 0; i < NDP_NFILTERS; i++) has_delta |= ci.filters[i] == NDP_DELTA;

  int32_t *sorted = (int32_t *)malloc(sizeof(int32_t) * (size_t)nblocks);
  span *sp = (span *)malloc(sizeof(span) * (size_t)(n + 1));
  if (sorted == NULL || sp == NULL) {
    free(sorted);
    free(sp);
    return ndp_fail(err, NDP_ERR_MEMORY, "fd_read_blocks: out of memory");
  }
  int64_t result = 0;
  int32_t lo = cbytes;
  for (int32_t j = 0; j < nblocks; j++) {
    int32_t s = ndp_rd32(buf + NDP_EXT_HEADER + 4 * j);
    if (s < hend || s >= cbytes) goto done;           /* corrupt: the decoder says so */
    sorted[j] = s;
    if (s < lo) lo = s;
  }
  qsort(sorted, (size_t)nblocks, sizeof(int32_t), cmp_i32);
  /* the spans of the wanted blocks: a block ends where the next stored one begins */
  int32_t ns = 0;
  for (int32_t i = 0; i < n + has_delta; i++) {
    int32_t j = i < n ? numbers[i] : 0;
    int32_t s = ndp_rd32(buf + NDP_EXT_HEADER + 4 * j);
    int32_t a = 0, b = nblocks;                        /* first sorted start > s */
    while (a < b) {
      int32_t m = a + (b - a) / 2;
      if (sorted[m] <= s) a = m + 1; else b = m;
    }
    sp[ns].start = s;
    sp[ns].end = a < nblocks ? sorted[a] : cbytes;
    ns++;
  }
  int64_t total = lo;
  int32_t nm = 0;
  if (ns > 0) {
    qsort(sp, (size_t)ns, sizeof(span), cmp_span);
    for (int32_t i = 0; i < ns; i++) {               /* merge overlapping or adjacent */
      if (nm > 0 && sp[i].start <= sp[nm - 1].end) {
        if (sp[i].end > sp[nm - 1].end) sp[nm - 1].end = sp[i].end;
      } else {
        sp[nm++] = sp[i];
      }
    }
    for (int32_t i = 0; i < nm; i++) {
      sp[i].at = (int32_t)total;
      total += sp[i].end - sp[i].start;
    }
  }
  if (total > cap) {
    *needed = total;
    goto done;
  }
  if (lo > hend && pread_full(fd, buf + hend, lo - hend, pos + hend) != 0) goto done;
  for (int32_t i = 0; i < nm; i++)
    if (pread_full(fd, buf + sp[i].at, sp[i].end - sp[i].start, pos + sp[i].start) != 0)
      goto done;
  if (entry != NULL) {
    /* the prefix as stored (its starts and cbytes are rewritten below) */
    int64_t dstart = hend;
    if (ci.use_dict) {
      int32_t dsize = lo - hend >= 4 ? ndp_rd32(buf + hend) : -1;
      if (dsize <= 0 || dsize > lo - hend - 4) goto done;
      dstart += 4 + dsize;
    }
    uint32_t got = ndp_crc32c(0, buf, (size_t)dstart);
    if (nentry != nblocks + 1 || got != entry[0]) {
      result = nentry != nblocks + 1
        ? ndp_fail(err, NDP_ERR_FORMAT, "the chunk does not match its block checksums (%d "
                   "recorded, the chunk has %d blocks)", (int)nentry - 1, (int)nblocks)
        : ndp_fail(err, NDP_ERR_FORMAT, "checksum mismatch in the chunk's header and block "
                   "starts (crc32c %08x, the record says %08x)", (unsigned)got,
                   (unsigned)entry[0]);
      goto done;
    }
  }
  /* new block starts: wanted blocks at their packed place (computed before the table
   * is overwritten), the others at the first wanted block's (never decoded) */
  int32_t *fresh = sorted;                           /* reuse: nblocks slots */
  for (int32_t j = 0; j < nblocks; j++) fresh[j] = -1;
  for (int32_t i = 0; i < n + has_delta; i++) {
    int32_t j = i < n ? numbers[i] : 0;
    int32_t s = ndp_rd32(buf + NDP_EXT_HEADER + 4 * j);
    const span *p = find_span(sp, nm, s);
    fresh[j] = p->at + (s - p->start);
  }
  int32_t fill = n + has_delta > 0 ? fresh[has_delta ? 0 : numbers[0]] : (int32_t)hend;
  for (int32_t j = 0; j < nblocks; j++)
    if (fresh[j] < 0) fresh[j] = fill;
  for (int32_t j = 0; j < nblocks; j++) ndp_wr32(buf + NDP_EXT_HEADER + 4 * j, fresh[j]);
  ndp_wr32(buf + 12, (int32_t)total);
  result = total;
  if (entry != NULL) {            /* the wanted blocks' bytes, now where they were packed */
    int rc = ndp_block_sums_check(buf, (int32_t)total, numbers, n, entry, nentry, 0, err);
    if (rc != NDP_OK) result = rc;
  }
done:
  free(sorted);
  free(sp);
  return result;
}
