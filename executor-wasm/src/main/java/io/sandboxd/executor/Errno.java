package io.sandboxd.executor;

/** The WASI preview 1 errno values the brokered `wasi_snapshot_preview1` functions return. */
final class Errno {
  static final int SUCCESS = 0;
  static final int ACCES = 2;
  static final int BADF = 8;
  static final int DQUOT = 19;
  static final int EXIST = 20;
  static final int FAULT = 21;
  static final int ILSEQ = 25;
  static final int INVAL = 28;
  static final int IO = 29;
  static final int ISDIR = 31;
  static final int LOOP = 32;
  static final int NOENT = 44;
  static final int NOTDIR = 54;
  static final int NOTSUP = 58;
  static final int PERM = 63;
  static final int NOTCAPABLE = 76;
  static final int XDEV = 75;

  private Errno() {}
}
