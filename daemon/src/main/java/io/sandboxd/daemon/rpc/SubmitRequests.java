package io.sandboxd.daemon.rpc;

import io.sandboxd.attest.Attestation;
import io.sandboxd.daemon.jcp.StandingGrants;
import io.sandboxd.daemon.run.AdmissionException;
import io.sandboxd.daemon.run.CommandInput;
import io.sandboxd.daemon.run.Submission;
import io.sandboxd.executor.ModuleStore;
import java.util.List;
import java.util.Optional;

/**
 * Decodes a {@link SubmitRequest} into the one {@link Submission} every path takes (waiting or
 * detached), refusing a malformed request naming its field: the module by its bytes or the address
 * of held bytes, the grants given or a minted child's (one use of it taken), the command's argv and
 * stdin. {@code standing} holds the minted child grants a submission may name ({@code
 * minted_grants}); null: none.
 */
record SubmitRequests(ModuleStore modules, StandingGrants standing) {

  Submission decode(SubmitRequest req) {
    if (req.getDetach() && (req.getArgsCount() > 1 || req.getStdinSet())) {
      throw new AdmissionException(
          "detach: a detached run takes no args or stdin (nobody is there to read its output)",
          null);
    }
    String grantsJson = req.getGrantsJson();
    Attestation.Jcp jcp = null;
    if (!req.getMintedGrants().isEmpty()) {
      if (!grantsJson.isEmpty() || standing == null) {
        throw new AdmissionException(
            standing == null
                ? "minted_grants: this node keeps no standing grants"
                : "grants_json, minted_grants: give exactly one");
      }
      StandingGrants.Resolved m = standing.use(req.getMintedGrants());
      grantsJson = m.grantsJson();
      jcp = new Attestation.Jcp(m.policy(), m.child(), List.of());
    }
    byte[] module = moduleOf(req);
    // Held bytes were checked against their address by the module store: admission need not hash.
    String address =
        req.getModuleAddress().isEmpty() ? null : ModuleStore.parseAddress(req.getModuleAddress());
    return new Submission(
        module,
        grantsJson,
        req.getEntry(),
        req.getEnv(),
        new CommandInput(
            req.getArgsList(),
            req.getStdinSet() ? Optional.of(req.getStdin().toByteArray()) : Optional.empty()),
        jcp,
        req.getDetach(),
        address);
  }

  /**
   * The submission's module bytes: those sent, or those held at {@code module_address} (exactly one
   * of the two may be given), within the node's module size.
   */
  private byte[] moduleOf(SubmitRequest req) {
    if (!req.getModuleAddress().isEmpty()) {
      if (!req.getModule().isEmpty()) {
        throw new AdmissionException(
            "module, module_address: give exactly one (the bytes or the address of held bytes)",
            null);
      }
      return modules.get(ModuleStore.parseAddress(req.getModuleAddress()));
    }
    modules.checkSize(req.getModule().size());
    return req.getModule().toByteArray();
  }
}
