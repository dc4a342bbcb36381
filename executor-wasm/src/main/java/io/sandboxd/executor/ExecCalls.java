package io.sandboxd.executor;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.enforcer.Decision;
import io.sandboxd.enforcer.ExecRequest;
import io.sandboxd.enforcer.FlowSource;
import io.sandboxd.enforcer.ProgramResolver;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * `exec`: a subprocess, allowed by the Enforcer on what would really execute (the resolved binary's
 * BLAKE3, through wrappers), bounded by max_processes, a timeout, the {@link ExecRoom} its files
 * may take and the {@link TreeBounds} of the node (processes and memory), output captured.
 */
final class ExecCalls {
  /** Output kept per stream; the rest is dropped and flagged. */
  static final int MAX_OUTPUT_BYTES = 1 << 20;

  private static final Set<String> FIELDS = Set.of("program", "args", "stdin");

  /**
   * Feeds the programs' input and reads their output: three blocking transfers an exec, each as
   * long as the program keeps its pipe open. Not the common pool, whose few workers (one fewer than
   * the cores) a unit's sleeping programs would hold, stalling every other exec on the node. A
   * thread a transfer, so at most three a live exec, and a run has one exec at a time.
   */
  private static final ExecutorService PIPES =
      Executors.newCachedThreadPool(
          new ThreadFactory() {
            private final AtomicInteger n = new AtomicInteger();

            @Override
            public Thread newThread(Runnable r) {
              Thread t = new Thread(r, "exec-pipe-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            }
          });

  private ExecCalls() {}

  static int exec(RunContext ctx, JsonCall call) {
    JsonNode json = call.request();
    List<String> argv;
    byte[] stdin;
    try {
      argv = argv(json);
      stdin =
          json.hasNonNull("stdin")
              ? Base64.getDecoder().decode(json.get("stdin").asText())
              : new byte[0];
    } catch (IllegalArgumentException e) {
      return AbiStatus.INVALID;
    }
    // Resolving reads and hashes every binary on the chain: do it only when exec could be allowed.
    // Without it the Enforcer denies the bare name all the same.
    boolean execGranted = ctx.enforcer.grants().process().map(p -> p.exec()).orElse(false);
    ProgramResolver.Resolution resolution =
        execGranted && !ctx.replaying() ? ctx.process.resolver().resolveWithBinaries(argv) : null;
    ExecRequest resolved =
        resolution != null
            ? resolution.request()
            : execGranted
                ? ctx.process.resolver().resolve(argv)
                : ExecRequest.named(argv.get(0).substring(argv.get(0).lastIndexOf('/') + 1));
    HostAnswer a =
        ctx.journaled(
            "exec",
            json,
            () -> {
              Decision d = ctx.enforcer.mayExec(resolved, ctx.process.running(), ctx.taint);
              if (!d.allowed()) {
                return SandboxImports.refusal(d);
              }
              return run(ctx, argv, resolution, stdin);
            },
            new FlowSource.ExecOutput(resolved));
    return call.deliver(a);
  }

  static List<String> argv(JsonNode json) {
    JsonCall.requireFields(json, FIELDS);
    if (!json.path("program").isTextual()
        || json.get("program").textValue().isEmpty()
        || json.get("program").textValue().indexOf('\0') >= 0) {
      throw new IllegalArgumentException("request.program: expected a program name");
    }
    List<String> argv = new ArrayList<>();
    argv.add(json.get("program").textValue());
    JsonNode args = json.get("args");
    if (args != null && !args.isNull()) {
      if (!args.isArray()) {
        throw new IllegalArgumentException("request.args: expected an array");
      }
      for (JsonNode a : args) {
        if (!a.isTextual() || a.textValue().indexOf('\0') >= 0) {
          throw new IllegalArgumentException("request.args: expected strings without NUL");
        }
        argv.add(a.textValue());
      }
    }
    return argv;
  }

  /**
   * Runs exactly the bytes that were hashed (copies in a private {@link ExecImage}), confined in a
   * {@link ProcessTree} whose CPU counts toward the run and which is killed, descendants and all,
   * when the program exits, times out, or the run is stopped.
   */
  private static HostAnswer run(
      RunContext ctx, List<String> argv, ProgramResolver.Resolution resolution, byte[] stdin) {
    if (resolution == null) {
      return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
    }
    ctx.process.spawning();
    ExecImage image = null;
    ExecRoom room = null;
    ProcessTree tree = null;
    try {
      image = ExecImage.of(resolution, ctx.services.reserve());
      List<String> command = new ArrayList<>(argv);
      command.set(0, image.program().toString());
      Path cwd = ctx.storage.root().map(StorageRoot::root).orElse(image.emptyWorkDir());
      room = new ExecRoom(ctx.storage.root(), cwd, ctx.services);
      tree =
          ProcessTree.start(
              command,
              cwd,
              Map.of("PATH", image.bin().toString()),
              room.fileLimit(),
              ctx.services.execTree(),
              readable(image, ctx.services),
              ctx.services.nodePrivate(),
              ProcessTree.cgroupParent());
      ctx.process.started(tree);
      TreeWatch watch = new TreeWatch(tree, ctx.services.execTree());
      Process p = tree.process();
      CompletableFuture<byte[]> out =
          CompletableFuture.supplyAsync(() -> drain(p.getInputStream()), PIPES);
      CompletableFuture<byte[]> err =
          CompletableFuture.supplyAsync(() -> drain(p.getErrorStream()), PIPES);
      // Fed beside the wait, not before it: a program that never reads would otherwise hold the
      // run's thread on a full pipe, past the exec's timeout and the checks of its room.
      CompletableFuture.runAsync(() -> feed(p.getOutputStream(), stdin), PIPES);
      boolean exited = false;
      boolean held = true;
      Optional<String> passed = Optional.empty();
      long deadline = System.nanoTime() + ctx.services.execTimeout().toNanos();
      while (!exited && held && passed.isEmpty()) {
        long now = System.nanoTime();
        if (now >= deadline) {
          break;
        }
        long next = Math.min(deadline, Math.min(room.nextCheck(), watch.nextCheck()));
        exited = p.waitFor(next - now, TimeUnit.NANOSECONDS);
        if (!exited && System.nanoTime() >= watch.nextCheck()) {
          passed = watch.passed();
        }
        if (!exited && passed.isEmpty() && System.nanoTime() >= room.nextCheck()) {
          held = room.held();
        }
      }
      if (exited && passed.isEmpty()) {
        // A forker that exits at its first refused fork (sh does) has still passed the bound.
        passed = watch.refused();
      }
      if (exited) {
        // Closing the tree closes our ends of the pipes: let the drains take what the program wrote
        // first (bounded: a descendant still holding a pipe open is killed just below).
        awaitQuietly(out);
        awaitQuietly(err);
      }
      // Whatever the program left running (setsid, background jobs) ends with it; the pipes close.
      tree.close();
      if (passed.isPresent()) {
        ctx.services
            .faults()
            .told("exec", "stopped a unit's exec'd program: its tree held " + passed.get());
        return HostAnswer.refused("Allow", AbiStatus.QUOTA);
      }
      if (!held) {
        return HostAnswer.refused("Allow", AbiStatus.QUOTA);
      }
      if (!exited) {
        return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
      }
      ObjectNode result = CanonicalJson.mapper().createObjectNode();
      result.put("exit", p.exitValue());
      result.put("stdout", Base64.getEncoder().encodeToString(out.join()));
      result.put("stderr", Base64.getEncoder().encodeToString(err.join()));
      return HostAnswer.allow(CanonicalJson.canonicalize(result));
    } catch (ExecImage.NoRoom e) {
      return HostAnswer.refused("Allow", AbiStatus.QUOTA);
    } catch (IOException e) {
      return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
    } finally {
      if (tree != null) {
        tree.close();
        ctx.process.ended(tree);
        // What the tree wrote counts from here on, for this run's writes and its module's others.
        room.settle();
      }
      if (image != null) {
        image.close();
      }
      ctx.process.reaped();
    }
  }

  /**
   * What the tree may read and execute besides the system's directories: its image (the copies of
   * its programs) and the node's search path, where scripts' commands are found.
   */
  private static List<Path> readable(ExecImage image, HostServices services) {
    List<Path> out = new ArrayList<>();
    out.add(image.bin().getParent());
    for (String dir : services.execSearchPath()) {
      out.add(Path.of(dir));
    }
    return out;
  }

  private static void feed(java.io.OutputStream in, byte[] stdin) {
    try (in) {
      in.write(stdin);
    } catch (IOException e) {
      // the child closed stdin early, or was stopped; its output still counts
    }
  }

  private static void awaitQuietly(CompletableFuture<byte[]> drain) throws InterruptedException {
    try {
      drain.get(2, TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
      // what was drained so far is what the guest gets
    }
  }

  private static byte[] drain(InputStream in) {
    try (in) {
      byte[] kept = in.readNBytes(MAX_OUTPUT_BYTES);
      in.transferTo(java.io.OutputStream.nullOutputStream());
      return kept;
    } catch (IOException e) {
      return new byte[0];
    }
  }
}
