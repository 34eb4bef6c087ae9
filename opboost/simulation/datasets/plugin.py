"""Built-in data sets, registered through the same hook a third-party plugin uses."""

from __future__ import annotations

from opboost.api.hookspecs import hookimpl


@hookimpl
def opboost_register_datasets():
    from opboost.simulation.datasets.bundled import Diabetes, Digits, SyntheticMulticlass, Wine
    from opboost.simulation.datasets.covertype import Covertype
    from opboost.simulation.datasets.fashion_mnist import FashionMNIST
    from opboost.simulation.datasets.multilabel import TMC2007_500, Scene
    from opboost.simulation.datasets.open_bandit import OpenBandit
    from opboost.simulation.datasets.uci_classification import DNA, Car, Connect4, Nursery
    from opboost.simulation.datasets.uci_regression import Abalone, Adult, Letter

    return [
        Digits,
        Wine,
        Diabetes,
        SyntheticMulticlass,
        Car,
        Nursery,
        Connect4,
        DNA,
        Abalone,
        Adult,
        Letter,
        FashionMNIST,
        Scene,
        TMC2007_500,
        Covertype,
        OpenBandit,
    ]
