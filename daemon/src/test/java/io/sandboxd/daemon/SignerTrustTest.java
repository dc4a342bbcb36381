package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.SigningKey;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** SignerTrust: unknown signers, origins of other keys and unbound keys are refused, named. */
class SignerTrustTest {
  static String key(int b) {
    byte[] seed = new byte[32];
    java.util.Arrays.fill(seed, (byte) b);
    return SigningKey.fromSeed(seed).publicKey().hex();
  }

  final String a = key(1);
  final String b = key(2);
  final String stranger = key(3);
  final SignerTrust trust =
      SignerTrust.of(
          List.of(
              SignerTrust.parse("sandboxd/a=" + a, "--signer"),
              SignerTrust.parse("sandboxd/b=" + b, "--signer")));

  @Test
  void aSignersOwnOriginPasses() {
    assertEquals(Optional.empty(), trust.refusal(a, "sandboxd/a", "agg", true));
  }

  @Test
  void anUnknownSignerIsRefusedNamingItsKey() {
    String why = trust.refusal(stranger, "sandboxd/a", "agg", true).orElseThrow();
    assertTrue(why.contains(stranger) && why.contains("not trusted"), why);
  }

  @Test
  void anOriginSwappedBetweenTwoTrustedKeysIsRefusedNamingBoth() {
    String why = trust.refusal(b, "sandboxd/a", "agg", true).orElseThrow();
    assertTrue(why.contains("sandboxd/a") && why.contains(a) && why.contains(b), why);
  }

  @Test
  void anOriginNoKeyIsBoundToIsRefusedForABoundSigner() {
    String why = trust.refusal(a, "sandboxd/elsewhere", "agg", false).orElseThrow();
    assertTrue(why.contains("sandboxd/elsewhere") && why.contains("sandboxd/a"), why);
  }

  @Test
  void anUnboundKeyPassesOnlyWhereNoBindingIsRequired() {
    SignerTrust bare = SignerTrust.of(List.of(SignerTrust.parse(a, "--signer")));
    assertEquals(Optional.empty(), bare.refusal(a, "sandboxd/x", "cp", false));
    String why = bare.refusal(a, "sandboxd/x", "agg", true).orElseThrow();
    assertTrue(why.contains("sandboxd/x") && why.contains(a) && why.contains("ORIGIN=KEY"), why);
  }

  @Test
  void malformedSpecsAreRefusedNamingTheField() {
    assertThrows(AttestException.class, () -> SignerTrust.parse("=" + a, "--signer"));
    AttestException e =
        assertThrows(AttestException.class, () -> SignerTrust.parse("x=zz", "--signer"));
    assertTrue(e.getMessage().contains("--signer"), e.getMessage());
  }
}
