package io.sandboxd.attest;

/** The verdict on one signed object: valid, or invalid with the reason. */
public sealed interface Verification {
  boolean isValid();

  /** The object verifies. */
  record Valid() implements Verification {
    @Override
    public boolean isValid() {
      return true;
    }
  }

  /** The object does not verify, and why. */
  record Invalid(String reason) implements Verification {
    @Override
    public boolean isValid() {
      return false;
    }
  }
}
