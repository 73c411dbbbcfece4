// Intentionally empty: AtomicsShim is header-only (see include/AtomicsShim.h).
// SwiftPM needs one source file to build a C target.
