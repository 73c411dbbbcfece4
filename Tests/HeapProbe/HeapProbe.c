// Header-only: see include/HeapProbe.h.
