/// The first name of ``StartingLine`` (a barrier whose threads spin until a common start
/// time), kept for the tests that use it.
typealias SpinBarrier = StartingLine
