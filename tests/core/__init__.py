"""The C core through the binding: chunks, codecs, filters, SIMD kernels, vmath, checksums, golden chunk vectors."""
