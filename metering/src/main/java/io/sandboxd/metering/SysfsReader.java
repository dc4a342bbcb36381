package io.sandboxd.metering;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Reads one small sysfs/procfs text file; injectable so tests can simulate what root cannot. */
@FunctionalInterface
public interface SysfsReader {
  String read(Path file) throws IOException;

  /** The real file system. */
  static SysfsReader files() {
    return file -> new String(Files.readAllBytes(file), StandardCharsets.US_ASCII);
  }
}
