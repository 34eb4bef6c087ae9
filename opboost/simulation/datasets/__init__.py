"""Data set loaders: bundled scikit-learn data, synthetic data, and real data from a data dir."""

from opboost.api.dataset import Dataset, SupervisedData, resolve_data_dir

__all__ = ["Dataset", "SupervisedData", "resolve_data_dir"]
