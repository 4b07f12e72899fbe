"""The namespace as users call it: the array API and python-blosc2's names, dtypes, xarray."""
