package io.sandboxd.metering;

import com.sun.jna.Library;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;

/**
 * The part of NVML ({@code libnvidia-ml.so.1}) the GPU meter calls. Every function returns an
 * {@code nvmlReturn_t}; {@code nvmlDevice_t} is an opaque pointer.
 */
public interface NvmlLibrary extends Library {
  int NVML_SUCCESS = 0;
  int NVML_ERROR_NOT_SUPPORTED = 3;

  /** NVML_DEVICE_UUID_V2_BUFFER_SIZE. */
  int UUID_BUFFER_SIZE = 96;

  /** {@code nvmlReturn_t nvmlInit_v2(void);} */
  int nvmlInit_v2();

  /** {@code nvmlReturn_t nvmlShutdown(void);} */
  int nvmlShutdown();

  /** {@code nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount);} */
  int nvmlDeviceGetCount_v2(IntByReference deviceCount);

  /**
   * {@code nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);}
   */
  int nvmlDeviceGetHandleByIndex_v2(int index, PointerByReference device);

  /**
   * {@code nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);}
   */
  int nvmlDeviceGetUUID(Pointer device, byte[] uuid, int length);

  /**
   * {@code nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long
   * *energy);} in mJ since the driver was last loaded (Volta and newer).
   */
  int nvmlDeviceGetTotalEnergyConsumption(Pointer device, LongByReference energy);

  /**
   * {@code nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power);} in mW.
   */
  int nvmlDeviceGetPowerUsage(Pointer device, IntByReference power);

  /** {@code const char *nvmlErrorString(nvmlReturn_t result);} */
  String nvmlErrorString(int result);
}
