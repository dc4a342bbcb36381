package io.sandboxd.executor;

import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.PrivateFile;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;

/**
 * The node's content-addressed module store: one file per module, named by the BLAKE3-256 of its
 * bytes, in a private directory. A module is validated and compiled (as admission does) before
 * anything is written, written and fsynced (file, then directory after the rename) before {@link
 * #put} returns, and its bytes are checked against its address on read (hashed again whenever the
 * file may have changed since it was last hashed).
 */
public final class ModuleStore {
  private static final Pattern HEX64 = Pattern.compile("[0-9a-f]{64}");

  private final Path dir;
  private final UnitCompiler compiler;
  private final long maxBytes;
  private final long maxModules;
  private long held;

  private ModuleStore(Path dir, UnitCompiler compiler, long maxBytes, long maxModules, long held) {
    this.dir = dir;
    this.compiler = compiler;
    this.maxBytes = maxBytes;
    this.maxModules = maxModules;
    this.held = held;
  }

  /**
   * Opens (creating, mode 0700) the store in {@code dir}; modules are validated with {@code
   * compiler}, whose factory cache then holds them. Partial writes a crash left are removed.
   */
  public static ModuleStore open(Path dir, UnitCompiler compiler, long maxBytes, long maxModules) {
    try {
      long n = 0;
      for (Path f : StoreFiles.openSwept(dir)) {
        if (HEX64.matcher(f.getFileName().toString()).matches()) {
          n++;
        }
      }
      return new ModuleStore(dir, compiler, maxBytes, maxModules, n);
    } catch (IOException e) {
      throw new ModuleStoreException("module store " + dir + ": cannot open: " + e, e);
    }
  }

  /** The outcome of a put: the module's address and size, and whether it was held before. */
  public record Put(String address, long bytes, boolean alreadyHeld) {}

  /** One held module. */
  public record Held(String address, long bytes, long storedMs) {}

  /**
   * Parses a module address given as {@code b3:<64 hex>} or 64 hex (either case) to 64 lowercase
   * hex.
   *
   * @throws ModuleStoreException.BadAddress naming what is wrong
   */
  public static String parseAddress(String text) {
    String hex = text.startsWith("b3:") ? text.substring(3) : text;
    String lower = hex.toLowerCase(Locale.ROOT);
    if (!HEX64.matcher(lower).matches()) {
      String shown = text.length() > 80 ? text.substring(0, 80) + "..." : text;
      throw new ModuleStoreException.BadAddress(
          "module_address: \""
              + shown
              + "\" is not a module address (b3:<64 hex> or 64 hex, BLAKE3-256 of the module)");
    }
    return lower;
  }

  /** The largest module this store (and a submission of bytes) accepts. */
  public long maxBytes() {
    return maxBytes;
  }

  /**
   * Refuses {@code length} bytes past the configured size.
   *
   * @throws ModuleStoreException.Limit naming both
   */
  public void checkSize(long length) {
    if (length > maxBytes) {
      throw new ModuleStoreException.Limit(
          "module: " + length + " bytes; this node accepts modules of at most " + maxBytes);
    }
  }

  /**
   * Validates {@code wasm} and stores it by its address; returns once it is durable. A module that
   * does not validate throws {@link UnitException} and nothing is stored.
   */
  public Put put(byte[] wasm) {
    return put(wasm, null);
  }

  /** As {@link #put(byte[])}, compiling within {@code caller}'s share of the compile slots. */
  public Put put(byte[] wasm, Object caller) {
    checkSize(wasm.length);
    String address = UnitCompiler.addressOf(wasm);
    compiler.compileMetered(address, wasm, caller);
    Path file = dir.resolve(address);
    synchronized (this) {
      if (Files.isRegularFile(file)) {
        // Held: but re-written if its bytes were damaged, so the put repairs it.
        try {
          get(address);
          return new Put(address, wasm.length, true);
        } catch (ModuleStoreException.Damaged e) {
          held--;
        }
      }
      if (held >= maxModules) {
        throw new ModuleStoreException.Limit(
            "module store: holds " + held + " modules, the most this node keeps");
      }
      write(file, wasm);
      held++;
    }
    return new Put(address, wasm.length, false);
  }

  private void write(Path file, byte[] wasm) {
    Path tmp = dir.resolve(StoreFiles.TMP_PREFIX + file.getFileName() + "-" + System.nanoTime());
    try {
      try (FileChannel ch =
          FileChannel.open(
              tmp,
              java.util.Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
              PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
        PrivateFile.writeFully(ch, wasm);
        ch.force(true);
      }
      try {
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        throw new IOException("the state directory cannot rename atomically", e);
      }
      // The rename is durable only once the directory is.
      PrivateFile.syncDirectory(dir);
    } catch (IOException e) {
      try {
        Files.deleteIfExists(tmp);
      } catch (IOException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw new ModuleStoreException(
          "module store: cannot write " + file.getFileName() + ": " + e, e);
    }
  }

  /** Whether a module of {@code address} (64 lowercase hex) is held. */
  public boolean holds(String address) {
    return HEX64.matcher(address).matches() && Files.isRegularFile(dir.resolve(address));
  }

  /**
   * The bytes of the module at {@code address} (64 lowercase hex, see {@link #parseAddress}),
   * checked against the address.
   *
   * @throws ModuleStoreException.NotFound when not held
   * @throws ModuleStoreException.Damaged when the bytes do not hash to the address
   */
  public byte[] get(String address) {
    if (!HEX64.matcher(address).matches()) {
      throw new ModuleStoreException.BadAddress("module_address: not 64 lowercase hex");
    }
    Path file = dir.resolve(address);
    byte[] bytes;
    Seen before;
    Seen after;
    try {
      before = Seen.of(Files.readAttributes(file, BasicFileAttributes.class));
      Verified kept = verified.get(address);
      if (kept != null && kept.bytes() != null && kept.seen().equals(before)) {
        // The file hashed before and has not changed since: its bytes from memory, copied so a
        // caller cannot change what the next one gets.
        return kept.bytes().clone();
      }
      if (before.size() > Math.max(maxBytes, 64L << 20)) {
        throw new ModuleStoreException.Damaged(
            "module store: b3:" + address + " is larger than any module it accepts");
      }
      reads.incrementAndGet();
      bytes = Files.readAllBytes(file);
      after = Seen.of(Files.readAttributes(file, BasicFileAttributes.class));
    } catch (NoSuchFileException e) {
      throw new ModuleStoreException.NotFound(address);
    } catch (IOException e) {
      throw new ModuleStoreException("module store: cannot read b3:" + address + ": " + e, e);
    }
    Verified seen = verified.get(address);
    if (before.equals(after)
        && after.size() == bytes.length
        && seen != null
        && after.equals(seen.seen())) {
      return bytes;
    }
    hashed.incrementAndGet();
    String actual = Blake3.hex(bytes);
    if (!actual.equals(address)) {
      throw new ModuleStoreException.Damaged(
          "module store: the file held as b3:"
              + address
              + " hashes to b3:"
              + actual
              + "; it was changed on disk (put the module again)");
    }
    if (before.equals(after) && System.currentTimeMillis() - after.modifiedMs() > TRUSTED_AGE_MS) {
      if (verified.size() >= MAX_VERIFIED) {
        verified.clear();
        keptBytes.set(0);
      }
      boolean keep = keptBytes.addAndGet(bytes.length) <= MAX_KEPT_BYTES;
      if (!keep) {
        keptBytes.addAndGet(-bytes.length);
      }
      Verified previous = verified.put(address, new Verified(after, keep ? bytes.clone() : null));
      if (previous != null && previous.bytes() != null) {
        keptBytes.addAndGet(-previous.bytes().length);
      }
    }
    return bytes;
  }

  /**
   * What the file system says of a module file. The same inode, size and mtime as when its bytes
   * were hashed mean the same bytes: a put renames a new inode into place, and a write in place
   * moves the mtime on. File times tick coarsely (milliseconds), so a file written within a tick of
   * being checked could keep its mtime: only a file older than {@link #TRUSTED_AGE_MS} when hashed
   * is trusted afterwards; a younger one is hashed on every read.
   */
  private record Seen(Object fileKey, long size, long modifiedNs) {
    static Seen of(BasicFileAttributes a) {
      return new Seen(a.fileKey(), a.size(), a.lastModifiedTime().to(TimeUnit.NANOSECONDS));
    }

    long modifiedMs() {
      return TimeUnit.NANOSECONDS.toMillis(modifiedNs);
    }
  }

  /** A module file as it was when its bytes hashed to its address, and those bytes if kept. */
  private record Verified(Seen seen, byte[] bytes) {}

  private static final long TRUSTED_AGE_MS = 2_000;
  private static final int MAX_VERIFIED = 4_096;
  // Bytes of verified modules kept in memory, at most this much in all: a run by address then
  // costs one stat, not an open and a read of the file.
  private static final long MAX_KEPT_BYTES = 64L << 20;
  // Re-hashing a module on every run read the whole file through BLAKE3 for each submission by
  // address (about 80 ms of a 4 MiB unit's run); verified once, it is hashed again only on change.
  private final Map<String, Verified> verified = new ConcurrentHashMap<>();
  private final AtomicLong keptBytes = new AtomicLong();
  private final AtomicLong hashed = new AtomicLong();
  private final AtomicLong reads = new AtomicLong();

  /** How many reads hashed their module's bytes (tests: a verified, unchanged file is not). */
  long hashes() {
    return hashed.get();
  }

  /** How many reads opened their module's file (tests: a kept, unchanged module is not). */
  long fileReads() {
    return reads.get();
  }

  /** The held modules, by address. */
  public List<Held> list() {
    List<Held> out = new ArrayList<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
      for (Path f : files) {
        String name = f.getFileName().toString();
        if (!HEX64.matcher(name).matches()) {
          continue;
        }
        try {
          BasicFileAttributes a = Files.readAttributes(f, BasicFileAttributes.class);
          out.add(new Held(name, a.size(), a.lastModifiedTime().toMillis()));
        } catch (NoSuchFileException gone) {
          // Removed while listing.
        }
      }
    } catch (IOException e) {
      throw new ModuleStoreException("module store: cannot list: " + e, e);
    }
    out.sort(Comparator.comparing(Held::address));
    return out;
  }

  /** The compiler that validates this store's modules, and its factory cache. */
  public UnitCompiler compiler() {
    return compiler;
  }
}
