package io.sandboxd.executor;

/**
 * A path argument of a WASI call: a string at {@code [ptr, ptr+len)} in guest memory, named
 * relative to the descriptor {@code dirFd}.
 */
record GuestPath(int dirFd, long ptr, long len) {
  /** The guest's bytes as strict UTF-8, or null (see {@link #errno}). */
  String text(GuestMemory mem) {
    if (!mem.inBounds(ptr, len)) {
      return null;
    }
    return SandboxImports.utf8(mem.read(ptr, len));
  }

  /** Why {@link #text} gave null: the string lies outside memory, or is not UTF-8. */
  int errno(GuestMemory mem) {
    return mem.inBounds(ptr, len) ? Errno.ILSEQ : Errno.FAULT;
  }
}
