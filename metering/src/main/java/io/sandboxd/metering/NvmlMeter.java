package io.sandboxd.metering;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Provenance;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * NVIDIA GPUs through NVML, one domain per device UUID. A device whose total-energy counter works
 * is read as a {@code HwShunt} counter (mJ, so 1000 µJ resolution); one without it has its power
 * draw (mW) integrated between samples with the trapezoid rule in integer arithmetic, labelled
 * {@code ModelBased}. A counter that drops is a driver reset, not a wrap: it is flagged and counted
 * from zero again.
 */
public final class NvmlMeter extends CounterMeter<NvmlMeter.Device> {
  /** The soname the driver installs. */
  public static final String DEFAULT_LIBRARY = "libnvidia-ml.so.1";

  static final String SOURCE = "nvml";
  static final long COUNTER_RESOLUTION_UJ = 1000;
  // NVIDIA does not document the counter's update period; 100 ms is a conservative window
  static final long COUNTER_MIN_WINDOW_NS = 100_000_000L;
  // power readings are averaged over about a second on current boards
  static final long POWER_MIN_WINDOW_NS = 1_000_000_000L;

  private final NvmlLibrary nvml;
  private boolean closed;

  private NvmlMeter(NvmlLibrary nvml, List<Device> devices, LongSupplier clock) {
    super(SOURCE, devices, d -> d.domain, clock);
    this.nvml = nvml;
  }

  /**
   * Loads NVML by name or path (searched on {@code jna.library.path} first), initializes it and
   * opens every device that can be metered.
   *
   * @throws MeterUnavailableException "no GPU meter": the library is missing, init fails, there is
   *     no device, or no device reports energy or power
   */
  public static NvmlMeter open(String library, LongSupplier clock)
      throws MeterUnavailableException {
    NvmlLibrary nvml;
    try {
      nvml = Native.load(library, NvmlLibrary.class);
    } catch (UnsatisfiedLinkError e) {
      throw new MeterUnavailableException("no GPU meter: " + library + " not loadable", e);
    }
    int rc = nvml.nvmlInit_v2();
    if (rc != NvmlLibrary.NVML_SUCCESS) {
      throw new MeterUnavailableException("no GPU meter: nvmlInit_v2 " + error(nvml, rc));
    }
    try {
      List<Device> devices = openDevices(nvml, clock);
      if (devices.isEmpty()) {
        throw new MeterUnavailableException("no GPU meter: NVML reports no meterable device");
      }
      return new NvmlMeter(nvml, List.copyOf(devices), clock);
    } catch (MeterUnavailableException | RuntimeException e) {
      nvml.nvmlShutdown();
      throw e;
    }
  }

  private static List<Device> openDevices(NvmlLibrary nvml, LongSupplier clock)
      throws MeterUnavailableException {
    IntByReference count = new IntByReference();
    int rc = nvml.nvmlDeviceGetCount_v2(count);
    if (rc != NvmlLibrary.NVML_SUCCESS) {
      throw new MeterUnavailableException("no GPU meter: nvmlDeviceGetCount_v2 " + error(nvml, rc));
    }
    List<Device> devices = new ArrayList<>();
    for (int i = 0; i < count.getValue(); i++) {
      PointerByReference ref = new PointerByReference();
      if (nvml.nvmlDeviceGetHandleByIndex_v2(i, ref) != NvmlLibrary.NVML_SUCCESS) {
        continue; // e.g. a device the caller may not use: it is simply not meterable here
      }
      Pointer handle = ref.getValue();
      byte[] uuid = new byte[NvmlLibrary.UUID_BUFFER_SIZE];
      if (nvml.nvmlDeviceGetUUID(handle, uuid, uuid.length) != NvmlLibrary.NVML_SUCCESS) {
        continue; // without a UUID the energy could not be tied to a grant
      }
      String id = cString(uuid);
      LongByReference energy = new LongByReference();
      IntByReference power = new IntByReference();
      if (nvml.nvmlDeviceGetTotalEnergyConsumption(handle, energy) == NvmlLibrary.NVML_SUCCESS) {
        MeterDomain domain =
            gpu(id, Provenance.HwShunt, COUNTER_RESOLUTION_UJ, COUNTER_MIN_WINDOW_NS);
        devices.add(new Device(domain, handle, true, energy.getValue(), clock.getAsLong()));
      } else if (nvml.nvmlDeviceGetPowerUsage(handle, power) == NvmlLibrary.NVML_SUCCESS) {
        MeterDomain domain = gpu(id, Provenance.ModelBased, 1, POWER_MIN_WINDOW_NS);
        devices.add(
            new Device(domain, handle, false, unsigned(power.getValue()), clock.getAsLong()));
      }
    }
    return devices;
  }

  /** One GPU's domain, measured the way {@code provenance} names. */
  private static MeterDomain gpu(
      String id, Provenance provenance, long resolutionUj, long minWindowNs) {
    return new MeterDomain(
        id, DeviceClass.Gpu, DomainRole.Device, provenance, resolutionUj, minWindowNs, SOURCE);
  }

  private static String cString(byte[] bytes) {
    int end = 0;
    while (end < bytes.length && bytes[end] != 0) {
      end++;
    }
    return new String(bytes, 0, end, StandardCharsets.US_ASCII);
  }

  private static long unsigned(int value) {
    return value & 0xFFFF_FFFFL;
  }

  private static String error(NvmlLibrary nvml, int rc) {
    String text;
    try {
      text = nvml.nvmlErrorString(rc);
    } catch (UnsatisfiedLinkError e) {
      text = null;
    }
    return "returned " + rc + (text == null ? "" : " (" + text + ")");
  }

  @Override
  void beginSample() throws MeterException {
    if (closed) {
      throw new MeterException("NVML meter is closed");
    }
  }

  @Override
  DomainCount read(Device d, long at) throws MeterException {
    if (d.counter) {
      LongByReference energy = new LongByReference();
      int rc = nvml.nvmlDeviceGetTotalEnergyConsumption(d.handle, energy);
      if (rc != NvmlLibrary.NVML_SUCCESS) {
        throw new MeterException(
            "nvmlDeviceGetTotalEnergyConsumption(" + d.domain.id() + ") " + error(nvml, rc));
      }
      long mj = energy.getValue();
      if (Long.compareUnsigned(mj, d.previous) >= 0) {
        d.totalUj = Math.addExact(d.totalUj, Math.multiplyExact(mj - d.previous, 1000L));
      } else {
        // the driver reloaded: the counter restarted from zero, so what it shows now is all
        // that is known since; the energy between the last sample and the reload is lost
        d.reset = true;
        d.totalUj = Math.addExact(d.totalUj, Math.multiplyExact(mj, 1000L));
      }
      d.previous = mj;
    } else {
      IntByReference power = new IntByReference();
      int rc = nvml.nvmlDeviceGetPowerUsage(d.handle, power);
      if (rc != NvmlLibrary.NVML_SUCCESS) {
        throw new MeterException(
            "nvmlDeviceGetPowerUsage(" + d.domain.id() + ") " + error(nvml, rc));
      }
      long mw = unsigned(power.getValue());
      long dt = Math.max(0, at - d.previousAt);
      d.integral.add(d.previous + mw, dt);
      d.totalUj = d.integral.totalUj();
      d.previous = mw;
      d.previousAt = at;
    }
    return new DomainCount(d.totalUj, d.reset);
  }

  @Override
  public synchronized void close() {
    if (!closed) {
      closed = true;
      nvml.nvmlShutdown();
    }
  }

  /** One GPU: its handle and either its unfolded mJ counter or its power integral. */
  static final class Device {
    final MeterDomain domain;
    final Pointer handle;
    final boolean counter;
    // trapezoid: (p0 + p1) mW × ns / 2 → µJ
    final PowerIntegral integral = new PowerIntegral(2 * PowerIntegral.MILLIWATT_NANOS_PER_UJ);

    /** The last mJ counter value, or the last power reading in mW. */
    long previous;

    long previousAt;
    long totalUj;
    boolean reset;

    Device(MeterDomain domain, Pointer handle, boolean counter, long first, long at) {
      this.domain = domain;
      this.handle = handle;
      this.counter = counter;
      this.previous = first;
      this.previousAt = at;
    }
  }
}
