package io.sandboxd.metering;

import com.sun.jna.Library;
import com.sun.jna.Native;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Builds the C stand-in for libnvidia-ml.so.1 with gcc into target/nvml-stub (once per test JVM),
 * puts that directory on {@code jna.library.path}, and drives the stub's devices.
 */
final class NvmlStub {
  /** The stub's extra functions, reached through the same loaded library as the meter's. */
  interface Control extends Library {
    void stub_reset(int count);

    void stub_set_init_result(int rc);

    void stub_set_energy(int device, long mj);

    void stub_set_energy_supported(int device, int supported);

    void stub_set_power(int device, int mw);

    int stub_init_calls();

    int stub_shutdown_calls();
  }

  static final String UUID0 = "GPU-00000000-0000-0000-0000-000000000000";
  static final String UUID1 = "GPU-00000000-0000-0000-0000-000000000001";

  private static Control control;

  private NvmlStub() {}

  /** Builds (first call only) and returns the control interface; resets the stub to 2 devices. */
  static synchronized Control reset(int devices) {
    if (control == null) {
      Path dir = build();
      System.setProperty("jna.library.path", dir.toString());
      control = Native.load(NvmlMeter.DEFAULT_LIBRARY, Control.class);
    }
    control.stub_reset(devices);
    return control;
  }

  private static Path build() {
    try {
      Path source = Path.of(NvmlStub.class.getResource("/nvml-stub/nvml_stub.c").toURI());
      // target/test-classes/nvml-stub/nvml_stub.c -> target/nvml-stub
      Path target = source.getParent().getParent().getParent();
      Path dir = target.resolve("nvml-stub");
      Files.createDirectories(dir);
      Path lib = dir.resolve(NvmlMeter.DEFAULT_LIBRARY);
      Process gcc =
          new ProcessBuilder(
                  "gcc",
                  "-shared",
                  "-fPIC",
                  "-O2",
                  "-Wall",
                  "-Werror",
                  "-o",
                  lib.toString(),
                  source.toString())
              .redirectErrorStream(true)
              .start();
      String out = new String(gcc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!gcc.waitFor(60, TimeUnit.SECONDS) || gcc.exitValue() != 0) {
        throw new IllegalStateException("gcc failed to build the NVML stub:\n" + out);
      }
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
