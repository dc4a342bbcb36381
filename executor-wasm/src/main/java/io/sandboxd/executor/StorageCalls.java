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
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Optional;

/**
 * `storage_read`, `storage_write`, `storage_delete`: files beneath the unit's storage root, each
 * path decided by the storage globs, escapes refused whatever the globs say, I/O ceilings kept as a
 * rate.
 */
final class StorageCalls {
  /** Largest single read a unit may ask for. */
  static final int MAX_READ_BYTES = 16 << 20;

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
            () -> {
              Decision d = ctx.enforcer.mayPath(PathMode.READ, p);
              if (!d.allowed()) {
                return SandboxImports.refusal(d);
              }
              Optional<Path> file = ctx.storage.flatMap(r -> r.resolve(p));
              if (file.isEmpty()) {
                return HostAnswer.refused("Denied", AbiStatus.DENIED);
              }
              if (!ctx.ioCeiling.admit(0)) {
                return HostAnswer.refused("Allow", AbiStatus.RATE);
              }
              return readFile(ctx, file.get(), offset);
            },
            new FlowSource.StorageRead(p));
    return SandboxImports.deliver(mem, a, outPtr, cap, lenOut);
  }

  private static HostAnswer readFile(RunContext ctx, Path file, long offset) {
    if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
      return HostAnswer.refused("Allow", AbiStatus.NOT_FOUND);
    }
    try (FileChannel ch =
        FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
      long remaining = Math.max(0, ch.size() - offset);
      if (remaining > MAX_READ_BYTES) {
        return HostAnswer.refused("Allow", AbiStatus.INVALID);
      }
      if (!ctx.ioCeiling.admit(remaining)) {
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
      ctx.readOps.incrementAndGet();
      ctx.readBytes.addAndGet(buf.position());
      byte[] out = new byte[buf.position()];
      buf.flip().get(out);
      return HostAnswer.allow(out);
    } catch (NoSuchFileException e) {
      return HostAnswer.refused("Allow", AbiStatus.NOT_FOUND);
    } catch (IOException e) {
      return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
    }
  }

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
      return AbiStatus.FAULT;
    }
    if (offset < 0) {
      return AbiStatus.INVALID;
    }
    Decision d = ctx.enforcer.mayPath(PathMode.WRITE, p);
    if (!d.allowed()) {
      return SandboxImports.status(d);
    }
    Optional<Path> file = ctx.storage.flatMap(r -> r.resolve(p));
    if (file.isEmpty()) {
      return AbiStatus.DENIED;
    }
    if (ctx.replaying()) {
      return AbiStatus.OK;
    }
    if (!ctx.ioCeiling.admit(0)) {
      return AbiStatus.RATE;
    }
    try {
      Path parent = file.get().getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      try (FileChannel ch =
          FileChannel.open(
              file.get(),
              StandardOpenOption.CREATE,
              StandardOpenOption.WRITE,
              LinkOption.NOFOLLOW_LINKS)) {
        ByteBuffer buf = ByteBuffer.wrap(data);
        long pos = offset;
        while (buf.hasRemaining()) {
          pos += ch.write(buf, pos);
        }
      }
      ctx.writeBytes.addAndGet(data.length);
      return AbiStatus.OK;
    } catch (IOException e) {
      return AbiStatus.UNAVAILABLE;
    }
  }

  static int delete(RunContext ctx, GuestMemory mem, long pathPtr, long pathLen) {
    StoragePath p = path(mem, pathPtr, pathLen);
    Decision d = ctx.enforcer.mayPath(PathMode.DELETE, p);
    if (!d.allowed()) {
      return SandboxImports.status(d);
    }
    Optional<Path> file = ctx.storage.flatMap(r -> r.resolve(p));
    if (file.isEmpty()) {
      return AbiStatus.DENIED;
    }
    if (ctx.replaying()) {
      return AbiStatus.OK;
    }
    try {
      return Files.deleteIfExists(file.get()) ? AbiStatus.OK : AbiStatus.NOT_FOUND;
    } catch (IOException e) {
      return AbiStatus.UNAVAILABLE;
    }
  }
}
