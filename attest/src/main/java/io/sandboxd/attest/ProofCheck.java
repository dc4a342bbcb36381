package io.sandboxd.attest;

/** The verdict on a merkle inclusion or consistency proof: valid, or the typed reason it is not. */
public sealed interface ProofCheck {
  boolean isValid();

  /** Why a proof was rejected. */
  enum Failure {
    /**
     * A tree size is negative, or the old size exceeds the new one, or it is 0 where RFC 9162
     * forbids.
     */
    TREE_SIZE,
    /** The leaf index is negative or not below the tree size. */
    LEAF_INDEX,
    /** A leaf hash or proof element does not have the hash function's output length. */
    HASH_LENGTH,
    /** The proof has more or fewer elements than the sizes (and index) determine. */
    PROOF_LENGTH,
    /** The proof does not lead to the (new) root given. */
    ROOT_MISMATCH,
    /** A consistency proof does not lead back to the old root given. */
    OLD_ROOT_MISMATCH
  }

  /** The proof verifies. */
  record Valid() implements ProofCheck {
    @Override
    public boolean isValid() {
      return true;
    }
  }

  /** The proof does not verify; {@code detail} says what was expected. */
  record Invalid(Failure failure, String detail) implements ProofCheck {
    @Override
    public boolean isValid() {
      return false;
    }
  }
}
