package io.sandboxd.metering;

import com.sun.jna.LastErrorException;
import com.sun.jna.Memory;
import java.nio.file.Path;

/**
 * An open {@code /dev/cpu/N/msr} (or a fixture file laid out the same way): an 8-byte little-endian
 * register at file offset = MSR address, read with {@code pread}.
 */
final class MsrFile implements AutoCloseable {
  private final Path path;
  private final int fd;
  private final Memory buffer = new Memory(8);

  private MsrFile(Path path, int fd) {
    this.path = path;
    this.fd = fd;
  }

  static MsrFile open(Path path) throws MeterUnavailableException {
    try {
      return new MsrFile(path, PosixLibrary.C.open(path.toString(), PosixLibrary.O_RDONLY));
    } catch (LastErrorException e) {
      String hint =
          e.getErrorCode() == 13 || e.getErrorCode() == 1
              ? " (the msr device needs root with CAP_SYS_RAWIO and the msr module loaded)"
              : e.getErrorCode() == 2 ? " (is the msr module loaded? modprobe msr)" : "";
      throw new MeterUnavailableException(
          "cannot open " + path + ": errno " + e.getErrorCode() + hint, e);
    }
  }

  Path path() {
    return path;
  }

  /**
   * Reads one register.
   *
   * @throws MeterException when the register cannot be read (EIO: the CPU does not implement it) or
   *     the read comes back short (past the end of a fixture)
   */
  synchronized long read(long msr) throws MeterException {
    long n;
    try {
      n = PosixLibrary.C.pread(fd, buffer, 8, msr);
    } catch (LastErrorException e) {
      throw new MeterException(preadOf(msr) + " failed: errno " + e.getErrorCode(), e);
    }
    if (n != 8) {
      throw new MeterException(preadOf(msr) + " returned " + n + " bytes, not 8");
    }
    // x86 is little-endian, and so is the msr device's layout; JNA reads in native order
    return buffer.getLong(0);
  }

  /** Which read failed, for its message: the register and the device file. */
  private String preadOf(long msr) {
    return "pread of MSR 0x" + Long.toHexString(msr) + " on " + path;
  }

  @Override
  public synchronized void close() {
    try {
      PosixLibrary.C.close(fd);
    } catch (LastErrorException e) {
      // nothing to recover: the descriptor is gone either way
    }
  }
}
