package io.sandboxd.executor;

import com.dylibso.chicory.annotations.HostModule;
import com.dylibso.chicory.annotations.WasmExport;
import com.dylibso.chicory.runtime.HostFunction;
import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.runtime.Memory;
import com.dylibso.chicory.runtime.WasmFunctionHandle;
import com.dylibso.chicory.wasi.WasiExitException;
import com.dylibso.chicory.wasi.WasiPreview1;
import com.dylibso.chicory.wasm.WasmModule;
import com.dylibso.chicory.wasm.types.FunctionType;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.NonReadableChannelException;
import java.nio.channels.NonWritableChannelException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The `wasi_snapshot_preview1` namespace (ABI.md) of one instance: the calls sandboxd brokers are
 * the annotated methods below (Chicory's annotation processor generates {@code
 * WasiImports_ModuleFactory} from them), every other call is Chicory's own, taken by name from
 * {@link #FROM_CHICORY}. Both reach the run through a {@link RunBinding}, so an instance can be
 * made before its run exists and serve each run bound to it: the run's {@link WasiRun} (Chicory's
 * preview 1 state, the path broker, stdio into the run log) is attached at bind time. Counting,
 * journaling and the errno for channel misuse happen in one wrapper, {@link #wrapped}.
 */
@HostModule(WasiImports.NAMESPACE)
final class WasiImports {
  static final String NAMESPACE = "wasi_snapshot_preview1";

  /**
   * The calls answered by Chicory's preview 1 as it is (on the bound run's descriptors): they touch
   * nothing a grant decides beyond what the broker already decided when the descriptor was opened.
   */
  static final List<String> FROM_CHICORY =
      List.of(
          "adapter_close_badfd",
          "adapter_open_badfd",
          "args_get",
          "args_sizes_get",
          "clock_res_get",
          "environ_get",
          "environ_sizes_get",
          "fd_advise",
          "fd_datasync",
          "fd_fdstat_get",
          "fd_fdstat_set_flags",
          "fd_pread",
          "fd_prestat_dir_name",
          "fd_prestat_get",
          "fd_read",
          "fd_seek",
          "fd_sync",
          "fd_tell",
          "poll_oneoff",
          "proc_raise",
          "sched_yield");

  /** The signature of every preview 1 function Chicory implements. */
  private static final Map<String, FunctionType> SIGNATURES = chicorySignatures();

  /** Calls that count themselves through the journal. */
  private static final Set<String> JOURNALED_ALWAYS = Set.of("clock_time_get", "random_get");

  private final RunBinding binding;

  private WasiImports(RunBinding binding) {
    this.binding = binding;
  }

  /**
   * The WASI host functions of one instance, serving whichever run {@code binding} holds: the
   * brokered ones and Chicory's, each through {@link #wrapped}.
   */
  static HostFunction[] functions(RunBinding binding) {
    List<HostFunction> out = new ArrayList<>();
    for (HostFunction f : WasiImports_ModuleFactory.toHostFunctions(new WasiImports(binding))) {
      out.add(wrapped(binding, f.name(), f.functionType(), f.handle()));
    }
    for (String name : FROM_CHICORY) {
      out.add(
          wrapped(
              binding,
              name,
              SIGNATURES.get(name),
              (inst, args) -> binding.wasi().chicory(name).apply(inst, args)));
    }
    return out.toArray(new HostFunction[0]);
  }

  /** The calls sandboxd brokers: its annotated methods. */
  static List<String> brokeredNames() {
    List<String> out = new ArrayList<>();
    for (HostFunction f :
        WasiImports_ModuleFactory.toHostFunctions(new WasiImports(new RunBinding()))) {
      out.add(f.name());
    }
    return out;
  }

  /** True when {@code module} imports anything from `wasi_snapshot_preview1`. */
  static boolean imports(WasmModule module) {
    var section = module.importSection();
    for (int i = 0; i < section.importCount(); i++) {
      if (section.getImport(i).module().equals(NAMESPACE)) {
        return true;
      }
    }
    return false;
  }

  /** The signature of a WASI function Chicory implements, or null. */
  static FunctionType signature(String name) {
    return SIGNATURES.get(name);
  }

  static String names() {
    return String.join(", ", new TreeMap<>(SIGNATURES).keySet());
  }

  private static Map<String, FunctionType> chicorySignatures() {
    Map<String, FunctionType> out = new HashMap<>();
    try (WasiPreview1 probe = WasiPreview1.builder().build()) {
      for (HostFunction f : probe.toHostFunctions()) {
        out.put(f.name(), f.functionType());
      }
    }
    return Collections.unmodifiableMap(out);
  }

  private interface Call {
    int apply(Instance inst, long[] args);
  }

  /**
   * One WASI function of the bound run: counted once, journaled when it reaches the run's storage
   * (every descriptor and path call, when the run has a storage root), and a descriptor used
   * against the mode it was opened with answered {@code NOTCAPABLE}, whoever implements the body.
   */
  private static HostFunction wrapped(
      RunBinding binding, String name, FunctionType type, WasmFunctionHandle body) {
    boolean storage = touchesStorage(name);
    boolean selfCounted = JOURNALED_ALWAYS.contains(name);
    Call live =
        (inst, args) -> {
          try {
            long[] r = body.apply(inst, args);
            return r == null || r.length == 0 ? Errno.SUCCESS : (int) r[0];
          } catch (NonReadableChannelException | NonWritableChannelException e) {
            // e.g. ftruncate on a descriptor opened read-only: the rights were decided at open.
            return Errno.NOTCAPABLE;
          }
        };
    return new HostFunction(
        NAMESPACE,
        name,
        type,
        (inst, args) -> {
          RunContext ctx = binding.context();
          int errno;
          if (storage && binding.wasi().storageBrokered()) {
            errno = journaledFs(ctx, binding.wasi(), name, live, inst, args);
          } else {
            if (!selfCounted) {
              ctx.countCall();
            }
            errno = live.apply(inst, args);
          }
          return type.returns().isEmpty() ? null : new long[] {errno};
        });
  }

  private WasiRun run() {
    return binding.wasi();
  }

  // ---- the brokered calls: one method each, its parameters the wasm parameters ----

  @WasmExport("clock_time_get")
  public int clockTimeGet(Memory memory, int clockId, long precision, int resultPtr) {
    return run().clockTimeGet(memory, clockId, precision, resultPtr);
  }

  @WasmExport("random_get")
  public int randomGet(Memory memory, int buf, int bufLen) {
    return run().randomGet(memory, buf, bufLen);
  }

  @WasmExport("path_open")
  public int pathOpen(
      Memory memory,
      int dirFd,
      int lookup,
      int pathPtr,
      int pathLen,
      int oflags,
      long rights,
      long rightsInheriting,
      int fdflags,
      int fdPtr) {
    return run()
        .pathOpen(
            memory,
            new GuestPath(dirFd, pathPtr, pathLen),
            lookup,
            oflags,
            rights,
            rightsInheriting,
            fdflags,
            fdPtr);
  }

  @WasmExport("path_create_directory")
  public int pathCreateDirectory(Memory memory, int dirFd, int pathPtr, int pathLen) {
    return run().pathCreateDirectory(memory, new GuestPath(dirFd, pathPtr, pathLen));
  }

  @WasmExport("path_filestat_get")
  public int pathFilestatGet(
      Memory memory, int dirFd, int lookup, int pathPtr, int pathLen, int buf) {
    return run().pathFilestatGet(memory, new GuestPath(dirFd, pathPtr, pathLen), lookup, buf);
  }

  @WasmExport("path_filestat_set_times")
  public int pathFilestatSetTimes(
      Memory memory,
      int dirFd,
      int lookup,
      int pathPtr,
      int pathLen,
      long atim,
      long mtim,
      int fstFlags) {
    return run()
        .pathFilestatSetTimes(
            memory, new GuestPath(dirFd, pathPtr, pathLen), lookup, atim, mtim, fstFlags);
  }

  @WasmExport("path_link")
  public int pathLink(
      int oldFd, int oldLookup, int oldPtr, int oldLen, int newFd, int newPtr, int newLen) {
    return run().pathLink();
  }

  @WasmExport("path_readlink")
  public int pathReadlink(
      Memory memory, int dirFd, int pathPtr, int pathLen, int buf, int bufLen, int usedPtr) {
    return run().pathReadlink(memory, new GuestPath(dirFd, pathPtr, pathLen), buf, bufLen, usedPtr);
  }

  @WasmExport("path_remove_directory")
  public int pathRemoveDirectory(Memory memory, int dirFd, int pathPtr, int pathLen) {
    return run().pathRemoveDirectory(memory, new GuestPath(dirFd, pathPtr, pathLen));
  }

  @WasmExport("path_rename")
  public int pathRename(
      Memory memory, int oldFd, int oldPtr, int oldLen, int newFd, int newPtr, int newLen) {
    return run()
        .pathRename(
            memory, new GuestPath(oldFd, oldPtr, oldLen), new GuestPath(newFd, newPtr, newLen));
  }

  @WasmExport("path_symlink")
  public int pathSymlink(int oldPtr, int oldLen, int dirFd, int newPtr, int newLen) {
    return run().pathSymlink();
  }

  @WasmExport("path_unlink_file")
  public int pathUnlinkFile(Memory memory, int dirFd, int pathPtr, int pathLen) {
    return run().pathUnlinkFile(memory, new GuestPath(dirFd, pathPtr, pathLen));
  }

  @WasmExport("fd_readdir")
  public int fdReaddir(Memory memory, int fd, int buf, int bufLen, long cookie, int usedPtr) {
    return run().fdReaddir(memory, fd, buf, bufLen, cookie, usedPtr);
  }

  @WasmExport("fd_filestat_get")
  public int fdFilestatGet(Memory memory, int fd, int buf) {
    return run().fdFilestatGet(memory, fd, buf);
  }

  @WasmExport("fd_close")
  public int fdClose(int fd) {
    return run().fdClose(fd);
  }

  @WasmExport("fd_renumber")
  public int fdRenumber(int from, int to) {
    return run().fdRenumber(from, to);
  }

  @WasmExport("fd_write")
  public int fdWrite(Memory memory, int fd, int iovs, int iovsLen, int nwrittenPtr) {
    return run().fdWrite(memory, fd, iovs, iovsLen, nwrittenPtr);
  }

  @WasmExport("fd_pwrite")
  public int fdPwrite(Memory memory, int fd, int iovs, int iovsLen, long offset, int nwrittenPtr) {
    return run().fdPwrite(memory, fd, iovs, iovsLen, offset, nwrittenPtr);
  }

  @WasmExport("fd_allocate")
  public int fdAllocate(int fd, long offset, long len) {
    return run().fdAllocate(fd, offset, len);
  }

  @WasmExport("fd_filestat_set_size")
  public int fdFilestatSetSize(int fd, long size) {
    return run().fdFilestatSetSize(fd, size);
  }

  @WasmExport("fd_filestat_set_times")
  public int fdFilestatSetTimes(int fd, long atim, long mtim, int fstFlags) {
    return run().fdFilestatSetTimes(fd, atim, mtim, fstFlags);
  }

  /** Chicory traps on this one; a guest gets an errno instead. */
  @WasmExport("fd_fdstat_set_rights")
  public int fdFdstatSetRights(int fd, long rights, long rightsInheriting) {
    return Errno.NOTSUP;
  }

  // No socket is ever handed to a unit: the network is the `sandbox.egress` import's business.

  @WasmExport("sock_accept")
  public int sockAccept(int fd, int flags, int fdPtr) {
    return Errno.NOTSUP;
  }

  @WasmExport("sock_recv")
  public int sockRecv(int fd, int riData, int riDataLen, int riFlags, int roDataLen, int roFlags) {
    return Errno.NOTSUP;
  }

  @WasmExport("sock_send")
  public int sockSend(int fd, int siData, int siDataLen, int siFlags, int soDataLen) {
    return Errno.NOTSUP;
  }

  @WasmExport("sock_shutdown")
  public int sockShutdown(int fd, int how) {
    return Errno.NOTSUP;
  }

  /** The guest asked to end: its status becomes the unit's exit code. */
  @WasmExport("proc_exit")
  public void procExit(int status) {
    throw new WasiExitException(status);
  }

  // ---- the journal: every storage input a guest sees, and every storage change's answer ----

  /** Chicory's calls that read a file's bytes through a descriptor (argument 0). */
  private static final Set<String> READS_THROUGH = Set.of("fd_read", "fd_pread");

  private static final Set<String> DELETES = Set.of("path_unlink_file", "path_remove_directory");

  private static final Set<String> WRITES =
      Set.of(
          "fd_write",
          "fd_pwrite",
          "fd_allocate",
          "fd_filestat_set_size",
          "fd_filestat_set_times",
          "path_create_directory",
          "path_filestat_set_times",
          "path_link",
          "path_symlink",
          "path_rename");

  /** Where each path-taking call keeps its (ptr, len) string arguments. */
  private static final Map<String, int[]> PATH_ARGS =
      Map.of(
          "path_create_directory", new int[] {1, 2},
          "path_filestat_get", new int[] {2, 3},
          "path_filestat_set_times", new int[] {2, 3},
          "path_link", new int[] {2, 3, 5, 6},
          "path_open", new int[] {2, 3},
          "path_readlink", new int[] {1, 2},
          "path_remove_directory", new int[] {1, 2},
          "path_rename", new int[] {1, 2, 4, 5},
          "path_symlink", new int[] {0, 1, 3, 4},
          "path_unlink_file", new int[] {1, 2});

  /** Calls that reach the storage through a descriptor or a path (and poll, which reads them). */
  static boolean touchesStorage(String name) {
    return name.startsWith("fd_") || name.startsWith("path_") || name.equals("poll_oneoff");
  }

  /**
   * A storage-touching WASI call, journaled: live, the call acts and what it handed the guest (its
   * errno and every byte it wrote into guest memory) is recorded; in a replay that record is
   * written back and the disk is never touched. Writes are journaled too (with a hash of the bytes
   * written), so a replay answers them as recorded and notices a guest that writes differently.
   * Stdio descriptors (0, 1, 2) stay live: they are the run log and an empty stdin.
   */
  private static int journaledFs(
      RunContext ctx, WasiRun wasi, String name, Call live, Instance inst, long[] args) {
    if (name.startsWith("fd_") && args[0] >= 0 && args[0] < WasiPathBroker.ROOT_FD) {
      ctx.countCall();
      return live.apply(inst, args);
    }
    GuestMemory mem = new GuestMemory(inst.memory());
    ObjectNode request = fsRequest(name, mem, args);
    String call =
        DELETES.contains(name)
            ? "storage_delete"
            : WRITES.contains(name) ? "storage_write" : "storage_read";
    HostAnswer ans =
        ctx.journaledReads(
            call,
            request,
            () -> {
              int errno;
              wasi.reads().clear();
              if (READS_THROUGH.contains(name)) {
                wasi.readThrough((int) args[0]);
              }
              try {
                errno = live.apply(inst, args);
              } catch (com.dylibso.chicory.runtime.ChicoryInterruptedException e) {
                throw e;
              } catch (com.dylibso.chicory.wasm.ChicoryException e) {
                // A guest pointer outside memory: an errno the replay can give back too.
                errno = Errno.FAULT;
              }
              byte[] writes = errno == Errno.SUCCESS ? captured(name, mem, args) : new byte[0];
              String decision =
                  errno == Errno.ACCES || errno == Errno.NOTCAPABLE ? "Denied" : "Allow";
              return new HostAnswer(decision, errno, writes);
            },
            () -> wasi.reads().drain(ctx.enforcer));
    if (ctx.replaying() && !writeBack(mem, ans.payload())) {
      return Errno.FAULT;
    }
    return ans.status();
  }

  /** The request of a journaled storage call: its name, its arguments, its paths and data. */
  private static ObjectNode fsRequest(String name, GuestMemory mem, long[] args) {
    ObjectNode r = CanonicalJson.mapper().createObjectNode().put("wasi", name);
    com.fasterxml.jackson.databind.node.ArrayNode a = r.putArray("args");
    for (long v : args) {
      a.add(v);
    }
    int[] paths = PATH_ARGS.get(name);
    if (paths != null) {
      com.fasterxml.jackson.databind.node.ArrayNode p = r.putArray("paths");
      for (int i = 0; i < paths.length; i += 2) {
        byte[] raw = mem.readChecked(args[paths[i]], args[paths[i + 1]]);
        p.add(raw == null ? "fault" : io.sandboxd.attest.Blake3.hex(raw));
      }
    }
    if (name.equals("fd_write") || name.equals("fd_pwrite")) {
      com.fasterxml.jackson.databind.node.ArrayNode d = r.putArray("data");
      if (WasiRun.iovecBytes(mem, args[1], args[2]) < 0) {
        d.add("fault");
      } else {
        for (long i = 0; i < (args[2] & 0xffffffffL); i++) {
          long ptr = mem.u32(args[1] + i * 8);
          long len = mem.u32(args[1] + i * 8 + 4);
          d.add(io.sandboxd.attest.Blake3.hex(mem.read(ptr, len)));
        }
      }
    }
    return r;
  }

  /**
   * What a successful call wrote into guest memory, as {@code (ptr u32, len u32, bytes)} runs: only
   * the bytes it filled (a read's {@code nread}, a listing's {@code used}), not whole buffers.
   */
  private static byte[] captured(String name, GuestMemory mem, long[] a) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    switch (name) {
      case "fd_read", "fd_pread" -> {
        long nreadPtr = name.equals("fd_read") ? a[3] : a[4];
        long n = readU32(mem, nreadPtr);
        region(out, mem, nreadPtr, 4);
        long left = n;
        long iovs = a[1] & 0xffffffffL;
        for (long i = 0; left > 0 && i < (a[2] & 0xffffffffL); i++) {
          if (!mem.inBounds(iovs + i * 8, 8)) {
            break;
          }
          long ptr = mem.u32(iovs + i * 8);
          long len = Math.min(mem.u32(iovs + i * 8 + 4), left);
          region(out, mem, ptr, len);
          left -= len;
        }
      }
      case "fd_write" -> region(out, mem, a[3], 4);
      case "fd_pwrite" -> region(out, mem, a[4], 4);
      case "fd_readdir" -> {
        region(out, mem, a[1], readU32(mem, a[4]));
        region(out, mem, a[4], 4);
      }
      case "fd_filestat_get" -> region(out, mem, a[1], WasiRun.FILESTAT_BYTES);
      case "fd_fdstat_get" -> region(out, mem, a[1], FDSTAT_BYTES);
      case "fd_prestat_get" -> region(out, mem, a[1], 8);
      case "fd_prestat_dir_name" -> region(out, mem, a[1], a[2]);
      case "fd_seek" -> region(out, mem, a[3], 8);
      case "fd_tell" -> region(out, mem, a[1], 8);
      case "path_open" -> region(out, mem, a[8], 4);
      case "path_filestat_get" -> region(out, mem, a[4], WasiRun.FILESTAT_BYTES);
      case "path_readlink" -> {
        region(out, mem, a[3], readU32(mem, a[5]));
        region(out, mem, a[5], 4);
      }
      case "poll_oneoff" -> {
        region(out, mem, a[1], readU32(mem, a[3]) * 32);
        region(out, mem, a[3], 4);
      }
      default -> {}
    }
    return out.toByteArray();
  }

  private static final int FDSTAT_BYTES = 24;

  private static long readU32(GuestMemory mem, long ptr) {
    if (!mem.inBounds(ptr, 4)) {
      return 0;
    }
    return mem.u32(ptr);
  }

  private static void region(
      java.io.ByteArrayOutputStream out, GuestMemory mem, long ptr, long len) {
    if (len <= 0 || !mem.inBounds(ptr, len)) {
      return;
    }
    ByteBuffer h = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
    h.putInt((int) ptr).putInt((int) len);
    out.writeBytes(h.array());
    out.writeBytes(mem.read(ptr, len));
  }

  /**
   * Writes recorded {@code (ptr, len, bytes)} runs back into guest memory; false when one does not
   * fit.
   */
  private static boolean writeBack(GuestMemory mem, byte[] runs) {
    ByteBuffer b = ByteBuffer.wrap(runs).order(ByteOrder.LITTLE_ENDIAN);
    while (b.remaining() >= 8) {
      long ptr = b.getInt() & 0xffffffffL;
      long len = b.getInt() & 0xffffffffL;
      if (len > b.remaining() || !mem.inBounds(ptr, len)) {
        return false;
      }
      byte[] bytes = new byte[(int) len];
      b.get(bytes);
      mem.write(ptr, bytes);
    }
    return !b.hasRemaining();
  }
}
