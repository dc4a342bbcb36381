package io.sandboxd.executor;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.enforcer.Decision;
import io.sandboxd.enforcer.FlowSource;
import io.sandboxd.enforcer.PathMode;
import io.sandboxd.enforcer.StoragePath;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.FileSystemLoopException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;

/**
 * `storage_read`, `storage_write`, `storage_delete`: files beneath the unit's storage root, each
 * path decided by the storage globs, escapes refused whatever the globs say, I/O ceilings kept as a
 * rate.
 */
final class StorageCalls {
  /** Largest single read a unit may ask for. */
  static final int MAX_READ_BYTES = 16 << 20;

  /** The errors (strerror's words) of a file operation that the names in the tree decide. */
  private static final List<String> UNIT_REASONS =
      List.of(
          "Is a directory",
          "Not a directory",
          "Directory not empty",
          "File name too long",
          "File exists",
          "symbolic link");

  private StorageCalls() {}

  /** The normalized path; ends the call when the guest's bytes are not a valid path. */
  private static StoragePath path(GuestMemory mem, long ptr, long len) {
    byte[] raw = mem.readChecked(ptr, len);
    if (raw == null) {
      throw new SandboxImports.CallEnded(AbiStatus.FAULT);
    }
    String text = SandboxImports.utf8(raw);
    if (text == null) {
      throw new SandboxImports.CallEnded(AbiStatus.INVALID);
    }
    try {
      return StoragePath.parse(text);
    } catch (RuntimeException e) {
      // `..`, `.`, empty segments and NUL are refused at normalization: a denial, not a crash.
      throw new SandboxImports.CallEnded(AbiStatus.DENIED);
    }
  }

  static int read(
      RunContext ctx,
      GuestMemory mem,
      long pathPtr,
      long pathLen,
      long offset,
      long outPtr,
      long cap,
      long lenOut) {
    StoragePath p = path(mem, pathPtr, pathLen);
    if (!mem.inBounds(lenOut, 4) || !mem.inBounds(outPtr, cap)) {
      return AbiStatus.FAULT;
    }
    if (offset < 0) {
      return AbiStatus.INVALID;
    }
    ObjectNode request =
        CanonicalJson.mapper().createObjectNode().put("path", p.text()).put("offset", offset);
    HostAnswer a =
        ctx.journaledIfAllowed(
            ctx.enforcer.mayPath(PathMode.READ, p),
            SandboxImports::refusal,
            "storage_read",
            request,
            () ->
                live(
                    ctx,
                    PathMode.READ,
                    p,
                    file ->
                        ctx.storage.admit(0)
                            ? readFile(ctx, file, offset)
                            : HostAnswer.refused("Allow", AbiStatus.RATE)),
            new FlowSource.StorageRead(p));
    return SandboxImports.deliver(mem, a, outPtr, cap, lenOut);
  }

  private static HostAnswer readFile(RunContext ctx, Path file, long offset) {
    if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
      return HostAnswer.refused("Allow", AbiStatus.NOT_FOUND);
    }
    if (StorageRoot.multiplyLinked(file)) {
      // Its other name may be one the grant hides: a hard link never widens a grant.
      return HostAnswer.refused("Denied", AbiStatus.DENIED);
    }
    try (FileChannel ch =
        FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
      long remaining = Math.max(0, ch.size() - offset);
      if (remaining > MAX_READ_BYTES) {
        return HostAnswer.refused("Allow", AbiStatus.INVALID);
      }
      if (!ctx.storage.admit(remaining)) {
        return HostAnswer.refused("Allow", AbiStatus.RATE);
      }
      ByteBuffer buf = ByteBuffer.allocate((int) remaining);
      long pos = offset;
      while (buf.hasRemaining()) {
        int n = ch.read(buf, pos);
        if (n < 0) {
          break;
        }
        pos += n;
      }
      ctx.storage.countRead(buf.position());
      byte[] out = new byte[buf.position()];
      buf.flip().get(out);
      return HostAnswer.allow(out);
    } catch (NoSuchFileException e) {
      return HostAnswer.refused("Allow", AbiStatus.NOT_FOUND);
    } catch (IOException e) {
      return unavailable(ctx, "storage_read", e);
    }
  }

  /**
   * Writes at {@code offset}. The answer is journaled (with a hash of the bytes written), so a
   * replay answers it as recorded, never writes, and notices a guest that writes differently.
   */
  static int write(
      RunContext ctx,
      GuestMemory mem,
      long pathPtr,
      long pathLen,
      long offset,
      long dataPtr,
      long dataLen) {
    StoragePath p = path(mem, pathPtr, pathLen);
    byte[] data = mem.readChecked(dataPtr, dataLen);
    if (data == null) {
      return ctx.counted(AbiStatus.FAULT);
    }
    if (offset < 0) {
      return ctx.counted(AbiStatus.INVALID);
    }
    ObjectNode request =
        CanonicalJson.mapper()
            .createObjectNode()
            .put("path", p.text())
            .put("offset", offset)
            .put("len", data.length)
            .put("data", io.sandboxd.attest.Blake3.hex(data));
    return ctx.journaled(
            "storage_write",
            request,
            () -> live(ctx, PathMode.WRITE, p, file -> writeFile(ctx, file, offset, data)))
        .status();
  }

  /**
   * What the live storage answers: the grant decides {@code mode} on {@code p}, then {@code call}
   * acts on the host file the path names; a path the storage root cannot hold is DENIED.
   */
  private static HostAnswer live(
      RunContext ctx, PathMode mode, StoragePath p, Function<Path, HostAnswer> call) {
    Decision d = ctx.enforcer.mayPath(mode, p);
    if (!d.allowed()) {
      return SandboxImports.refusal(d);
    }
    Optional<Path> file = ctx.storage.resolve(p);
    if (file.isEmpty()) {
      return HostAnswer.refused("Denied", AbiStatus.DENIED);
    }
    return call.apply(file.get());
  }

  private static HostAnswer writeFile(RunContext ctx, Path file, long offset, byte[] data) {
    if (StorageRoot.multiplyLinked(file)) {
      return HostAnswer.refused("Denied", AbiStatus.DENIED);
    }
    if (!ctx.storage.admit(0)) {
      return HostAnswer.refused("Allow", AbiStatus.RATE);
    }
    StorageLedger ledger = ctx.storage.ledger();
    long before = StorageRoot.size(file);
    boolean exists = Files.exists(file, LinkOption.NOFOLLOW_LINKS);
    // Holes count: a write at 2^40 would otherwise make a 1 TiB sparse file.
    long end = offset > Long.MAX_VALUE - data.length ? Long.MAX_VALUE : offset + data.length;
    long entries = exists ? 0 : StorageLedger.ENTRY_BYTES * missingEntries(ctx, file);
    long growth = Math.max(0, end - before) + entries;
    if (!ledger.reserveWrite(growth)) {
      return HostAnswer.refused("Allow", AbiStatus.QUOTA);
    }
    boolean written = false;
    try {
      Path parent = file.getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      try (FileChannel ch =
          FileChannel.open(
              file,
              StandardOpenOption.CREATE,
              StandardOpenOption.WRITE,
              LinkOption.NOFOLLOW_LINKS)) {
        ByteBuffer buf = ByteBuffer.wrap(data);
        long pos = offset;
        while (buf.hasRemaining()) {
          pos += ch.write(buf, pos);
        }
      }
      ctx.storage.countWrite(data.length);
      written = true;
      return HostAnswer.allow(new byte[0]);
    } catch (IOException e) {
      return unavailable(ctx, "storage_write", e);
    } finally {
      // Settled to what the disk shows (the names made count only when the write went through).
      ledger.settleWrite(
          growth, StorageRoot.size(file) - before + (written ? entries : 0) - growth);
    }
  }

  /** How many of {@code file} and its parents below the root do not exist yet. */
  private static long missingEntries(RunContext ctx, Path file) {
    Path root = ctx.storage.dir();
    long n = 0;
    for (Path p = file; p != null && !p.equals(root); p = p.getParent()) {
      if (Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
        break;
      }
      n++;
    }
    return n;
  }

  /** Deletes a file; journaled like a write, so a replay deletes nothing. */
  static int delete(RunContext ctx, GuestMemory mem, long pathPtr, long pathLen) {
    StoragePath p = path(mem, pathPtr, pathLen);
    ObjectNode request = CanonicalJson.mapper().createObjectNode().put("path", p.text());
    return ctx.journaled(
            "storage_delete",
            request,
            () -> live(ctx, PathMode.DELETE, p, file -> deleteFile(ctx, file)))
        .status();
  }

  private static HostAnswer deleteFile(RunContext ctx, Path file) {
    long cost = StorageRoot.cost(file);
    try {
      if (!Files.deleteIfExists(file)) {
        return HostAnswer.refused("Allow", AbiStatus.NOT_FOUND);
      }
      ctx.storage.ledger().settle(-cost);
      return HostAnswer.allow(new byte[0]);
    } catch (IOException e) {
      return unavailable(ctx, "storage_delete", e);
    }
  }

  /**
   * UNAVAILABLE, for {@code call} failing with {@code e}; told to the node unless the unit's own
   * names caused it, since the unit learns only the status and a full disk must not go unheard.
   */
  private static HostAnswer unavailable(RunContext ctx, String call, IOException e) {
    if (!unitCaused(e)) {
      ctx.services
          .faults()
          .told(call, "failed on this node, and the unit was answered UNAVAILABLE: " + e);
    }
    return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
  }

  /**
   * Whether {@code e} is what the unit's own tree caused: a directory where it wrote a file, a file
   * where its path needs a directory, a directory it deletes with files in it, a name too long. The
   * rest (no room, a quota, an I/O error, a read-only or unreadable tree, no descriptors) is the
   * node's. What a unit makes the daemon tell is paced where it is told.
   */
  static boolean unitCaused(IOException e) {
    if (e instanceof FileAlreadyExistsException
        || e instanceof DirectoryNotEmptyException
        || e instanceof NotDirectoryException
        || e instanceof NoSuchFileException
        || e instanceof FileSystemLoopException) {
      return true;
    }
    String reason = e instanceof FileSystemException f ? f.getReason() : e.getMessage();
    return reason != null && UNIT_REASONS.stream().anyMatch(reason::contains);
  }
}
