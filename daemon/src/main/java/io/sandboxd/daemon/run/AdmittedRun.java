package io.sandboxd.daemon.run;

import io.sandboxd.attest.Attestation;
import io.sandboxd.executor.UnitIo;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * A submission that admission let through: its compiled unit and grants (holding the caller's run
 * slot until closed), the offered environment it runs in, its command input as the executor sees
 * it, the minted child it runs under (null for none) and the uid that submitted it.
 */
public record AdmittedRun(
    Admission.Admitted admitted,
    Optional<OfferedEnvironments.Offer> environment,
    CommandInput input,
    UnitIo io,
    Attestation.Jcp jcp,
    OptionalLong submitterUid)
    implements AutoCloseable {
  /** Gives the caller's run slot back (once the run is recorded, or it failed to start). */
  @Override
  public void close() {
    admitted.slot().close();
  }
}
