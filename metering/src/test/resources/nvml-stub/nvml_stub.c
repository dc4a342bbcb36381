/*
 * A stand-in for libnvidia-ml.so.1, built by the tests with gcc: the NVML entry points the GPU meter
 * calls, over devices whose counters the tests drive through the stub_* control functions.
 */
#include <stdio.h>
#include <string.h>

#define MAX_DEVICES 8
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_DRIVER_NOT_LOADED 9

struct device {
  int index;
  int energy_supported;
  int power_supported;
  unsigned long long energy_mj;
  unsigned int power_mw;
};

static struct device devices[MAX_DEVICES];
static unsigned int device_count = 2;
static int init_result = NVML_SUCCESS;
static int initialized = 0;
static int init_calls = 0;
static int shutdown_calls = 0;

/* ---- control, called by the tests ---- */

void stub_reset(unsigned int count) {
  device_count = count > MAX_DEVICES ? MAX_DEVICES : count;
  init_result = NVML_SUCCESS;
  initialized = 0;
  init_calls = 0;
  shutdown_calls = 0;
  for (int i = 0; i < MAX_DEVICES; i++) {
    devices[i].index = i;
    devices[i].energy_supported = 1;
    devices[i].power_supported = 1;
    devices[i].energy_mj = 0;
    devices[i].power_mw = 0;
  }
}

void stub_set_init_result(int rc) { init_result = rc; }
void stub_set_energy(unsigned int i, unsigned long long mj) { devices[i].energy_mj = mj; }
void stub_set_energy_supported(unsigned int i, int supported) { devices[i].energy_supported = supported; }
void stub_set_power(unsigned int i, unsigned int mw) { devices[i].power_mw = mw; }
int stub_init_calls(void) { return init_calls; }
int stub_shutdown_calls(void) { return shutdown_calls; }

/* ---- the NVML API ---- */

int nvmlInit_v2(void) {
  init_calls++;
  if (init_result == NVML_SUCCESS) initialized = 1;
  return init_result;
}

int nvmlShutdown(void) {
  shutdown_calls++;
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  initialized = 0;
  return NVML_SUCCESS;
}

const char *nvmlErrorString(int result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}

int nvmlDeviceGetCount_v2(unsigned int *count) {
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *count = device_count;
  return NVML_SUCCESS;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, struct device **device) {
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (index >= device_count || device == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &devices[index];
  return NVML_SUCCESS;
}

int nvmlDeviceGetUUID(struct device *device, char *uuid, unsigned int length) {
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (device == NULL || uuid == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  int n = snprintf(uuid, length, "GPU-00000000-0000-0000-0000-00000000000%d", device->index);
  return n < 0 || (unsigned int)n >= length ? NVML_ERROR_INVALID_ARGUMENT : NVML_SUCCESS;
}

int nvmlDeviceGetTotalEnergyConsumption(struct device *device, unsigned long long *energy) {
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (device == NULL || energy == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (!device->energy_supported) return NVML_ERROR_NOT_SUPPORTED;
  *energy = device->energy_mj;
  return NVML_SUCCESS;
}

int nvmlDeviceGetPowerUsage(struct device *device, unsigned int *power) {
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (device == NULL || power == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (!device->power_supported) return NVML_ERROR_NOT_SUPPORTED;
  *power = device->power_mw;
  return NVML_SUCCESS;
}
