/*
 * Floating-point kernel: the classic five-body (Sun and four giant planets) leapfrog integration in
 * double precision, STEPS steps, returning a checksum of the final energy.
 */
#include <stdint.h>

#define STEPS 600000
#define N 5

static const double PI = 3.141592653589793;
static const double DAYS_PER_YEAR = 365.24;

static double px[N], py[N], pz[N], vx[N], vy[N], vz[N], mass[N];
static volatile double result;

static void body(int i, double x, double y, double z, double u, double v, double w, double m) {
  const double solar = 4 * PI * PI;
  px[i] = x;
  py[i] = y;
  pz[i] = z;
  vx[i] = u * DAYS_PER_YEAR;
  vy[i] = v * DAYS_PER_YEAR;
  vz[i] = w * DAYS_PER_YEAR;
  mass[i] = m * solar;
}

static void init(void) {
  body(0, 0, 0, 0, 0, 0, 0, 1);
  body(1, 4.84143144246472090e+00, -1.16032004402742839e+00, -1.03622044471123109e-01,
       1.66007664274403694e-03, 7.69901118419740425e-03, -6.90460016972063023e-05,
       9.54791938424326609e-04);
  body(2, 8.34336671824457987e+00, 4.12479856412430479e+00, -4.03523417114321381e-01,
       -2.76742510726862411e-03, 4.99852801234917238e-03, 2.30417297573763929e-05,
       2.85885980666130812e-04);
  body(3, 1.28943695621391310e+01, -1.51111514016986312e+01, -2.23307578892655734e-01,
       2.96460137564761618e-03, 2.37847173959480950e-03, -2.96589568540237556e-05,
       4.36624404335156298e-05);
  body(4, 1.53796971148509165e+01, -2.59193146099879641e+01, 1.79258772950371181e-01,
       2.68067772490389322e-03, 1.62824170038242295e-03, -9.51592254519715870e-05,
       5.15138902046611451e-05);
  double sx = 0, sy = 0, sz = 0;
  for (int i = 0; i < N; i++) {
    sx += vx[i] * mass[i];
    sy += vy[i] * mass[i];
    sz += vz[i] * mass[i];
  }
  const double solar = 4 * PI * PI;
  vx[0] = -sx / solar;
  vy[0] = -sy / solar;
  vz[0] = -sz / solar;
}

static void advance(double dt) {
  for (int i = 0; i < N; i++) {
    for (int j = i + 1; j < N; j++) {
      double dx = px[i] - px[j], dy = py[i] - py[j], dz = pz[i] - pz[j];
      double d2 = dx * dx + dy * dy + dz * dz;
      double mag = dt / (d2 * __builtin_sqrt(d2));
      vx[i] -= dx * mass[j] * mag;
      vy[i] -= dy * mass[j] * mag;
      vz[i] -= dz * mass[j] * mag;
      vx[j] += dx * mass[i] * mag;
      vy[j] += dy * mass[i] * mag;
      vz[j] += dz * mass[i] * mag;
    }
  }
  for (int i = 0; i < N; i++) {
    px[i] += dt * vx[i];
    py[i] += dt * vy[i];
    pz[i] += dt * vz[i];
  }
}

static double energy(void) {
  double e = 0;
  for (int i = 0; i < N; i++) {
    e += 0.5 * mass[i] * (vx[i] * vx[i] + vy[i] * vy[i] + vz[i] * vz[i]);
    for (int j = i + 1; j < N; j++) {
      double dx = px[i] - px[j], dy = py[i] - py[j], dz = pz[i] - pz[j];
      e -= mass[i] * mass[j] / __builtin_sqrt(dx * dx + dy * dy + dz * dz);
    }
  }
  return e;
}

__attribute__((export_name("run"))) int run(void) {
  init();
  for (int s = 0; s < STEPS; s++) {
    advance(0.01);
  }
  result = energy();
  return 0;
}

/* The final energy in units of 1e-9, truncated, to compare engines. */
__attribute__((export_name("check"))) int32_t check(void) { return (int32_t)(result * 1e9); }
