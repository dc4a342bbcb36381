package io.sandboxd.executor;

import com.dylibso.chicory.annotations.HostModule;
import com.dylibso.chicory.annotations.WasmExport;
import com.dylibso.chicory.runtime.HostFunction;
import com.dylibso.chicory.runtime.Memory;
import com.dylibso.chicory.wasm.types.FunctionType;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.enforcer.Decision;
import io.sandboxd.enforcer.HostService;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;

/**
 * The `sandbox` import namespace (ABI.md): one method per import, whose Java signature is the
 * import's wasm signature (Chicory's annotation processor generates {@code
 * SandboxImports_ModuleFactory}, the host functions, from it). Each function asks the Enforcer
 * first, answers a denial with a status code, never a trap, and journals every nondeterministic
 * input it hands the guest. The capability-specific bodies live in {@link KvCalls}, {@link
 * StorageCalls}, {@link EgressCalls}, {@link ExecCalls} and {@link InferCalls}; every body runs
 * through {@link #call}, which finds the bound run, counts the call once and turns an early {@link
 * CallEnded} into its status.
 */
@HostModule(SandboxImports.NAMESPACE)
final class SandboxImports {
  static final String NAMESPACE = "sandbox";

  /** The signature of every import, derived from the annotated methods below. */
  private static final Map<String, FunctionType> SIGNATURES = signatures();

  private final RunBinding binding;

  private SandboxImports(RunBinding binding) {
    this.binding = binding;
  }

  /** The host functions of one instance, serving whichever run {@code binding} holds. */
  static HostFunction[] functions(RunBinding binding) {
    return SandboxImports_ModuleFactory.toHostFunctions(new SandboxImports(binding));
  }

  private static Map<String, FunctionType> signatures() {
    Map<String, FunctionType> s = new TreeMap<>();
    for (HostFunction f : functions(new RunBinding())) {
      s.put(f.name(), f.functionType());
    }
    return Collections.unmodifiableMap(s);
  }

  static FunctionType signature(String name) {
    return SIGNATURES.get(name);
  }

  static String names() {
    return String.join(", ", SIGNATURES.keySet());
  }

  // ---- the imports: one method each, its parameters the wasm parameters ----

  @WasmExport("log")
  public int log(Memory memory, int ptr, int len) {
    return call(memory, (ctx, mem) -> log(ctx, mem, ptr, len));
  }

  @WasmExport("clock_now")
  public int clockNow(Memory memory, int outPtr) {
    return call(memory, (ctx, mem) -> clockNow(ctx, mem, outPtr));
  }

  @WasmExport("random_u64")
  public int randomU64(Memory memory, int outPtr) {
    return call(memory, (ctx, mem) -> randomU64(ctx, mem, outPtr));
  }

  @WasmExport("kv_get")
  public int kvGet(Memory memory, int keyPtr, int keyLen, int outPtr, int cap, int lenOut) {
    return call(memory, (ctx, mem) -> KvCalls.get(ctx, mem, keyPtr, keyLen, outPtr, cap, lenOut));
  }

  @WasmExport("kv_put")
  public int kvPut(Memory memory, int keyPtr, int keyLen, int valPtr, int valLen) {
    return call(memory, (ctx, mem) -> KvCalls.put(ctx, mem, keyPtr, keyLen, valPtr, valLen));
  }

  @WasmExport("storage_read")
  public int storageRead(
      Memory memory, int pathPtr, int pathLen, long offset, int outPtr, int cap, int lenOut) {
    return call(
        memory,
        (ctx, mem) -> StorageCalls.read(ctx, mem, pathPtr, pathLen, offset, outPtr, cap, lenOut));
  }

  @WasmExport("storage_write")
  public int storageWrite(
      Memory memory, int pathPtr, int pathLen, long offset, int dataPtr, int dataLen) {
    return call(
        memory,
        (ctx, mem) -> StorageCalls.write(ctx, mem, pathPtr, pathLen, offset, dataPtr, dataLen));
  }

  @WasmExport("storage_delete")
  public int storageDelete(Memory memory, int pathPtr, int pathLen) {
    return call(memory, (ctx, mem) -> StorageCalls.delete(ctx, mem, pathPtr, pathLen));
  }

  @WasmExport("egress")
  public int egress(Memory memory, int reqPtr, int reqLen, int outPtr, int cap, int lenOut) {
    return call(memory, reqPtr, reqLen, outPtr, cap, lenOut, EgressCalls::egress);
  }

  @WasmExport("exec")
  public int exec(Memory memory, int reqPtr, int reqLen, int outPtr, int cap, int lenOut) {
    return call(memory, reqPtr, reqLen, outPtr, cap, lenOut, ExecCalls::exec);
  }

  @WasmExport("infer")
  public int infer(Memory memory, int reqPtr, int reqLen, int outPtr, int cap, int lenOut) {
    return call(memory, reqPtr, reqLen, outPtr, cap, lenOut, InferCalls::infer);
  }

  @WasmExport("yield_point")
  public int yieldPoint() {
    return call(null, (ctx, mem) -> yieldPoint(ctx));
  }

  // ---- the one wrapper every import runs through ----

  /** The body of one import, given its run and the guest's memory; returns the ABI status. */
  @FunctionalInterface
  interface Body {
    int call(RunContext ctx, GuestMemory mem);
  }

  /** The body of a {@code (req, len, out, cap, len_out)} import, given its run and call. */
  @FunctionalInterface
  interface JsonBody {
    int call(RunContext ctx, JsonCall call);
  }

  /** Runs a {@code (req, len, out, cap, len_out)} import's body through {@link #call}. */
  private int call(
      Memory memory, int reqPtr, int reqLen, int outPtr, int cap, int lenOut, JsonBody body) {
    return call(
        memory,
        (ctx, mem) -> body.call(ctx, new JsonCall(mem, reqPtr, reqLen, outPtr, cap, lenOut)));
  }

  /**
   * Runs one import's body for the bound run (a trap when none is bound) and counts it exactly
   * once: a journaled answer counts its own call (the WASI layer shares that path), every other
   * outcome is counted here.
   */
  private int call(Memory memory, Body body) {
    RunContext ctx = binding.context();
    long counted = ctx.hostCalls();
    try {
      return body.call(ctx, new GuestMemory(memory));
    } catch (CallEnded e) {
      return e.status;
    } finally {
      if (ctx.hostCalls() == counted) {
        ctx.countCall();
      }
    }
  }

  /**
   * Ends a call at once with a status (FAULT for a bad guest range, INVALID for bad input) from
   * wherever in its body the fault is found; {@link #call} returns the status to the guest.
   */
  static final class CallEnded extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final int status;

    CallEnded(int status) {
      super(null, null, false, false);
      this.status = status;
    }
  }

  static int status(Decision d) {
    if (d instanceof Decision.Denied) {
      return AbiStatus.DENIED;
    }
    return d instanceof Decision.Tainted ? AbiStatus.TAINTED : AbiStatus.OK;
  }

  /** A refused answer carrying the decision's status. */
  static HostAnswer refusal(Decision d) {
    return HostAnswer.refused(d.name(), status(d));
  }

  /** Hands an answer to the guest: its status, or its payload into {@code (out, cap, len_out)}. */
  static int deliver(GuestMemory mem, HostAnswer a, long outPtr, long cap, long lenOut) {
    return a.status() != AbiStatus.OK ? a.status() : mem.writeOut(outPtr, cap, lenOut, a.payload());
  }

  /** Reads guest bytes as strict UTF-8, or null when they are not. */
  static String utf8(byte[] bytes) {
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes))
          .toString();
    } catch (CharacterCodingException e) {
      return null;
    }
  }

  private static int log(RunContext ctx, GuestMemory mem, long ptr, long len) {
    Decision d = ctx.enforcer.mayHost(HostService.LOGGING);
    if (!d.allowed()) {
      return status(d);
    }
    if ((len & 0xffffffffL) > RunContext.MAX_LOG_BYTES) {
      return AbiStatus.INVALID;
    }
    if (ctx.logTruncated()) {
      // The run's log is full: further lines are dropped unread (a bad range is still a FAULT).
      return mem.inBounds(ptr, len) ? AbiStatus.OK : AbiStatus.FAULT;
    }
    byte[] msg = mem.readChecked(ptr, len);
    if (msg == null) {
      return AbiStatus.FAULT;
    }
    if (!isUtf8(msg)) {
      return AbiStatus.INVALID;
    }
    ctx.appendLog(msg);
    return AbiStatus.OK;
  }

  /** Strict UTF-8 check; plain ASCII (most log lines) is decided without a decoder. */
  static boolean isUtf8(byte[] bytes) {
    int i = 0;
    // Eight bytes at a time: ASCII has no high bit set in any of them.
    for (; i + 8 <= bytes.length; i += 8) {
      if (((long) LONGS.get(bytes, i) & 0x8080808080808080L) != 0) {
        return utf8(bytes) != null;
      }
    }
    for (; i < bytes.length; i++) {
      if (bytes[i] < 0) {
        return utf8(bytes) != null;
      }
    }
    return true;
  }

  private static final java.lang.invoke.VarHandle LONGS =
      java.lang.invoke.MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  private static int clockNow(RunContext ctx, GuestMemory mem, long outPtr) {
    if (!mem.inBounds(outPtr, 8)) {
      return AbiStatus.FAULT;
    }
    HostAnswer a =
        ctx.clock.read(
            ctx, CanonicalJson.mapper().createObjectNode(), AbiStatus.OK, ctx.clock::wallNanos);
    mem.write(outPtr, a.payload());
    return a.status();
  }

  private static int randomU64(RunContext ctx, GuestMemory mem, long outPtr) {
    if (!mem.inBounds(outPtr, 8)) {
      return AbiStatus.FAULT;
    }
    HostAnswer a =
        ctx.journaledIfAllowed(
            ctx.random.grant(),
            SandboxImports::refusal,
            "random_u64",
            CanonicalJson.mapper().createObjectNode(),
            () -> HostAnswer.allow(le64(ctx.random.nextLong())),
            null);
    if (a.status() == AbiStatus.OK) {
      mem.write(outPtr, a.payload());
    }
    return a.status();
  }

  private static int yieldPoint(RunContext ctx) {
    return ctx.yieldPoint();
  }

  static byte[] le64(long v) {
    return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array();
  }
}
