package io.sandboxd.daemon;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import org.sqlite.util.LibraryLoaderUtil;

/**
 * Copies the SQLite driver's native library for this OS and architecture out of the jar, for the
 * start-up cache: build-start-cache keeps it there and the launcher points the driver at it
 * (org.sqlite.lib.path), which otherwise writes its 1.1 MB to java.io.tmpdir and reads it back on
 * every start.
 */
public final class SqliteNativeLibrary {
  private SqliteNativeLibrary() {}

  /** {@code SqliteNativeLibrary DIR}: writes the library into DIR and prints its path. */
  public static void main(String[] args) throws IOException {
    if (args.length != 1) {
      System.err.println("usage: SqliteNativeLibrary DIR");
      System.exit(2);
    }
    String name = LibraryLoaderUtil.getNativeLibName();
    String resource = LibraryLoaderUtil.getNativeLibResourcePath() + "/" + name;
    Path dir = Files.createDirectories(Path.of(args[0]));
    Path target = dir.resolve(name);
    Path partial = dir.resolve(name + ".partial");
    try (InputStream in = SqliteNativeLibrary.class.getResourceAsStream(resource)) {
      if (in == null) {
        System.err.println("SqliteNativeLibrary: the jar has no " + resource + " for this system");
        System.exit(1);
      }
      Files.copy(in, partial, StandardCopyOption.REPLACE_EXISTING);
    }
    Files.move(
        partial, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    System.out.println(target);
  }
}
