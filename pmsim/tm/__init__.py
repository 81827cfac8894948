"""Transactional memory for optimistic runtimes: the hardware-TM runner (:mod:`.htm`) and a
TinySTM-like software TM (:mod:`.stm`)."""
