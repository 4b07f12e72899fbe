"""xarray backends: ``engine="ndpack"`` (duck arrays and dask) vs zarr v3 (with and
without dask) and NetCDF4/HDF5 through h5netcdf.

A 3-variable Dataset (time, lat, lon) of float32 (a smooth field plus noise rounded to
0.01; ~1.5 GB uncompressed, ``--quick``: ~10 MB), chunks of 16 time steps and whole
maps, written once per format with ZSTD clevel 1 + shuffle (ndpack; zarr's BloscCodec
the same; h5netcdf: gzip 1 + shuffle, the codec netCDF4 files have).  Rows:

* **open**: ``xr.open_dataset`` + close (metadata only);
* **point series**: open, then one grid point's whole time series ``.values``;
* **mean(time)**: ``ds.mean("time")`` into NumPy (xarray skips NaNs: ``np.nanmean``);
* **mean, skipna=F**: the same without NaN skipping (ndpack's fused sums);
* **anomaly to disk**: ``ds - ds.mean("time")`` written in the peer's own format
  (``ndpack.save_dataset`` / ``to_zarr`` / ``to_netcdf``).

Peers: ``nd`` = engine="ndpack" with chunks=None (variables are ndpack arrays: the
engine computes), ``nd+dask`` = chunks={} (dask over the stored chunks), ``zarr`` and
``zarr+dask`` (engine="zarr", chunks=None / {}), ``h5netcdf`` (chunks=None).  Each cell:
best wall time of the rounds and the peak RSS growth during the call; ratios are peer
time / nd time (> 1: nd faster).

    python benchmarks/bench_xarray.py            # full size (~1.5 GB)
    python benchmarks/bench_xarray.py --quick    # small, for CI (< 30 s)
    python benchmarks/bench_xarray.py --json out.json
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile

import numpy as np
from timing import best_with_rss, write_json

import ndpack

try:
    import xarray as xr
except ImportError:  # the bench's own dependency
    xr = None
try:
    import zarr
except ImportError:
    zarr = None
try:
    import h5netcdf  # noqa: F401
except ImportError:
    h5netcdf = None
try:
    import dask  # noqa: F401
except ImportError:
    dask = None

NAMES = ("temp", "prec", "wind")


def make_dataset(shape) -> "xr.Dataset":
    nt, ny, nx = shape
    rng = np.random.default_rng(0)
    t = np.arange(nt, dtype="f4")[:, None, None]
    y = np.linspace(-1, 1, ny, dtype="f4")[None, :, None]
    x = np.linspace(0, 2 * np.pi, nx, dtype="f4")[None, None, :]
    data = {}
    for i, name in enumerate(NAMES):
        field = 10 * np.sin(x + 0.01 * t * (i + 1)) * np.cos(y * (i + 2)) + 280 * (i == 0)
        noise = rng.normal(0, 0.5, shape).astype("f4")
        data[name] = (("time", "lat", "lon"), np.round(field + noise, 2).astype("f4"),
                      {"units": ["K", "mm", "m/s"][i]})
    return xr.Dataset(data, coords={
        "time": np.datetime64("2000-01-01") + np.arange(nt).astype("timedelta64[D]"),
        "lat": np.linspace(-90, 90, ny), "lon": np.linspace(0, 360, nx, endpoint=False)})


def write_all(ds, chunks, tmp) -> dict:
    paths = {"nd": os.path.join(tmp, "d.b2d")}
    ndpack.save_dataset(ds, paths["nd"], encoding={
        n: {"chunks": chunks, "cparams": {"codec": ndpack.Codec.ZSTD, "clevel": 1}}
        for n in NAMES})
    if zarr is not None:
        from zarr.codecs import BloscCodec
        paths["zarr"] = os.path.join(tmp, "d.zarr")
        ds.to_zarr(paths["zarr"], zarr_format=3, consolidated=False, encoding={
            n: {"chunks": chunks, "compressors": [BloscCodec(cname="zstd", clevel=1,
                                                             shuffle="shuffle")]}
            for n in NAMES})
    if h5netcdf is not None:
        paths["h5netcdf"] = os.path.join(tmp, "d.nc")
        ds.to_netcdf(paths["h5netcdf"], engine="h5netcdf", encoding={
            n: {"zlib": True, "complevel": 1, "shuffle": True, "chunksizes": chunks}
            for n in NAMES})
    return paths


def peers(paths) -> dict:
    """name -> (open(), write(ds, out))."""
    out = {}

    def nd_write(ds, path):
        ndpack.save_dataset(ds, path + ".b2z")

    def zarr_write(ds, path):
        ds.to_zarr(path + ".zarr", zarr_format=3, consolidated=False, mode="w")

    def nc_write(ds, path):
        ds.to_netcdf(path + ".nc", engine="h5netcdf")

    out["nd"] = (lambda: xr.open_dataset(paths["nd"], engine="ndpack"), nd_write)
    if dask is not None:
        out["nd+dask"] = (lambda: xr.open_dataset(paths["nd"], engine="ndpack", chunks={}),
                          nd_write)
    if "zarr" in paths:
        out["zarr"] = (lambda: xr.open_dataset(paths["zarr"], engine="zarr",
                                               consolidated=False), zarr_write)
        if dask is not None:
            out["zarr+dask"] = (lambda: xr.open_dataset(paths["zarr"], engine="zarr",
                                                        consolidated=False, chunks={}),
                                zarr_write)
    if "h5netcdf" in paths:
        out["h5netcdf"] = (lambda: xr.open_dataset(paths["h5netcdf"], engine="h5netcdf"),
                           nc_write)
    return out


def rows_for(shape, chunks, reps: int) -> list:
    tmp = tempfile.mkdtemp(prefix="bench_xarray_")
    try:
        ds = make_dataset(shape)
        nbytes = sum(ds[n].nbytes for n in NAMES)
        paths = write_all(ds, chunks, tmp)
        del ds
        sizes = {k: sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(p)
                        for f in fs) if os.path.isdir(p) else os.path.getsize(p)
                 for k, p in paths.items()}
        print(f"shape {shape} float32 x 3 = {nbytes / 2**20:.0f} MiB, chunks {chunks}; "
              f"on disk: " + ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in sizes.items()))
        iy, ix = shape[1] // 3, shape[2] // 2
        cases = {
            "open": lambda o, w: o().close(),
            "point series": lambda o, w: o().temp[:, iy, ix].values,
            "mean(time)": lambda o, w: o().mean("time").compute(),
            "mean, skipna=F": lambda o, w: o().mean("time", skipna=False).compute(),
            "anomaly to disk": lambda o, w: w((lambda d: d - d.mean("time"))(o()),
                                              os.path.join(tmp, "anom")),
        }
        table = peers(paths)
        rows = []
        for case, run in cases.items():
            cells = {}
            for name, (opener, writer) in table.items():
                t, rss = best_with_rss(lambda: run(opener, writer), reps)
                cells[name] = (t, rss)
                for f in os.listdir(tmp):
                    if f.startswith("anom"):
                        p = os.path.join(tmp, f)
                        shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
            base = cells["nd"][0]
            line = f"{case:16s}" + "".join(
                f" {n} {t * 1e3:8.1f} ms {rss / 2**20:6.0f} MB" +
                (f" ({t / base:5.2f}x)" if n != "nd" else "")
                for n, (t, rss) in cells.items())
            print(line, flush=True)
            rows.append({"case": case, "shape": shape, **{
                n: {"s": t, "rss": rss, "ratio": t / base} for n, (t, rss) in cells.items()}})
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small inputs, for CI")
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args(argv)
    if xr is None:
        print("bench_xarray: xarray is not installed; nothing to compare")
        return 0
    print("time per call, peak RSS growth; (x) = peer time / nd time (> 1: nd faster)")
    if args.quick:
        rows = rows_for((96, 90, 180), (16, 90, 180), 2)
    else:
        rows = rows_for((480, 361, 720), (16, 361, 720), 2)
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
