"""The copies a model scores with at reduced precision: its Linear weights stored once in bf16/fp16
(autocast would cast each on every call), or a dynamically quantized int8 copy. Each is made on first
use and kept until a weight changes or moves."""

from __future__ import annotations

import copy
import threading
import warnings
from typing import Any, Self

import torch
from torch import nn

from sieveqa.errors import ConfigError
from sieveqa.models._low_rank import adapter_rank

# Quantizing a model takes longer than scoring a small batch, so the int8 copy is made once; the lock
# keeps two threads from making it twice.
_QUANTIZE = threading.RLock()  # re-entered when a copy being made calls _apply


class InferenceCopies(nn.Module):
    """What EncoderModel keeps beside its weights for bf16, fp16 and int8 scoring."""

    precision: str

    def _drop_copies(self) -> None:
        with _QUANTIZE:
            self.__dict__.pop("_half", None)
            self.__dict__.pop("_int8", None)

    def _half_linear_copy(self) -> Self:
        """This model with its Linear layers' weights stored in the autocast dtype, every other tensor
        shared: autocast would otherwise cast each weight on every call (bench/half_linear.py: 16-36%
        faster on 2 cores with AMX; the scores are the same to the bit). Rebuilt when a weight is
        changed, replaced or moved (a training step, a load, ``.to``)."""
        dtype = torch.bfloat16 if self.precision == "bf16" else torch.float16
        self._version_linear_weights()
        linear = [t for m in self.modules() if isinstance(m, nn.Linear) for t in m.parameters(recurse=False)]
        # A weight changed in place bumps its version; a replaced tensor changes its id.
        key = (
            dtype,
            tuple((id(t), t.data_ptr(), t._version) for t in linear),
            tuple(id(t) for t in (*self.parameters(), *self.buffers())),
        )
        with _QUANTIZE:
            cached = self.__dict__.get("_half")
            if cached is None or cached[0] != key:
                # Shared: every tensor but the Linear ones, the featurizer and other plain attributes.
                memo: dict[int, Any] = {id(t): t for t in (*self.parameters(), *self.buffers())}
                memo |= {id(t): nn.Parameter(t.detach().to(dtype), requires_grad=False) for t in linear}
                memo |= {id(v): v for k, v in vars(self).items() if not k.startswith("_")}
                memo |= {id(cached): None, id(self.__dict__.get("_int8")): None}
                cached = (key, copy.deepcopy(self, memo))
                object.__setattr__(self, "_half", cached)  # not a submodule: never saved or moved
        return cached[1]

    def _version_linear_weights(self) -> None:
        """Linear weights made in inference mode (a model loaded inside it) have no version, so an
        in-place change of one went unseen and the bf16 copy mixed old and new weights: they become
        normal tensors (once; a weight shared by several layers stays shared)."""
        fresh: dict[int, nn.Parameter] = {}
        with torch.inference_mode(False):
            for module in self.modules():
                if not isinstance(module, nn.Linear):
                    continue
                for name, t in list(module._parameters.items()):
                    if t is not None and t.is_inference():
                        if id(t) not in fresh:
                            fresh[id(t)] = nn.Parameter(t.clone(), requires_grad=False)
                        module._parameters[name] = fresh[id(t)]

    def _int8_copy(self) -> Self:
        if adapter_rank(self) is not None:  # quantize_dynamic would drop the factors
            raise ConfigError("a model training at low rank runs in int8 once saved (its change merged)")
        with _QUANTIZE:
            cached = self.__dict__.get("_int8")
            if cached is None:
                # torch.ao's eager quantization is deprecated in favour of torchao (not a dependency);
                # it still works in the pinned torch, and its warnings would only repeat that.
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", category=DeprecationWarning)
                    warnings.simplefilter("ignore", category=UserWarning)
                    memo = {id(self.__dict__.get("_half")): None}  # not the bf16 copy, if one was made
                    cached = torch.ao.quantization.quantize_dynamic(
                        copy.deepcopy(self, memo), {nn.Linear}, dtype=torch.qint8
                    )
                # Not a registered submodule: it must not be saved, moved or trained with the model.
                object.__setattr__(self, "_int8", cached)
        return cached
