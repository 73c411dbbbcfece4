import AtomicsShim

// MARK: - Raw fields as data, for the schedule explorer

// The core keeps some of its state in raw memory that threads hand to each other through the
// state word's release and acquire, never through an atomic of their own: the callback links
// (`_next`, `embeddedNext`), a node's fire word and armed flag, a slot node's slot, the
// embedded node's fire function and slot. Exploration builds (`-DFF_EXPLORE`, scripts/explore)
// record each plain access to them, as the result cell's, so that the explorer checks that every
// read happens after the write it reads (a weakened release or acquire on the way is a reported
// data race). Other builds compile these to nothing (`@_transparent`, an empty body: no call even
// at -Onone).

/// Records a plain read of the raw field at `field` (exploration builds only).
@_transparent @usableFromInline
internal func _exploreRead(_ field: UnsafeRawPointer) {
    #if FF_EXPLORE
        _ = ff_explore_point(Int32(FF_EXPLORE_DATA_READ), field, 0)
    #endif
}

/// Records a plain write of the raw field at `field` (exploration builds only).
@_transparent @usableFromInline
internal func _exploreWrite(_ field: UnsafeRawPointer) {
    #if FF_EXPLORE
        _ = ff_explore_point(Int32(FF_EXPLORE_DATA_WRITE), field, 0)
    #endif
}

/// Records the end of the raw field at `field`'s life (exploration builds only): a node's deinit.
/// Its last reference's release orders the deinit after every use, but the explorer does not
/// model reference counts (a node's last reference may go on another thread than the one that
/// last wrote it: a `flatMap`'s node re-pushed on its inner future and run there, released by
/// its first runner), so the deinit forgets the field's writes instead of checking its reads.
@_transparent @usableFromInline
internal func _exploreFree(_ field: UnsafeRawPointer) {
    #if FF_EXPLORE
        _ = ff_explore_point(Int32(FF_EXPLORE_DATA_FREE), field, 0)
    #endif
}

/// The link of the node at `raw` (see `_CallbackNode._nextField`), its read recorded.
@inlinable @inline(__always)
internal func _exploreReadLink(_ raw: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer? {
    let link = _CallbackNode._nextField(raw)
    _exploreRead(link)
    return link.pointee
}
