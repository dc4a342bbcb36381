package io.sandboxd.daemon.run;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The node's accounts as {@code /etc/passwd} and {@code /etc/group} list them when the daemon
 * starts: user and group names to ids, and who belongs to a group (its member list and every user
 * whose primary group it is). Accounts only a name service (LDAP, sssd) knows are not seen: name
 * such callers by numeric id in the policy.
 */
public record Accounts(
    Map<String, Long> userIds,
    Map<Long, Long> primaryGroup,
    Map<String, Long> groupIds,
    Map<Long, Set<String>> groupMembers) {

  static final Path PASSWD = Path.of("/etc/passwd");
  static final Path GROUP = Path.of("/etc/group");

  /** The system's files; a missing file reads as no accounts. */
  public static Accounts system() {
    return read(PASSWD, GROUP);
  }

  public static Accounts read(Path passwd, Path group) {
    Map<String, Long> users = new HashMap<>();
    Map<Long, Long> primary = new HashMap<>();
    for (String[] f : lines(passwd, 4)) {
      Optional<Long> uid = id(f[2]);
      Optional<Long> gid = id(f[3]);
      if (uid.isPresent() && gid.isPresent()) {
        users.putIfAbsent(f[0], uid.get());
        primary.putIfAbsent(uid.get(), gid.get());
      }
    }
    Map<String, Long> groups = new HashMap<>();
    Map<Long, Set<String>> members = new HashMap<>();
    for (String[] f : lines(group, 3)) {
      Optional<Long> gid = id(f[2]);
      if (gid.isEmpty()) {
        continue;
      }
      groups.putIfAbsent(f[0], gid.get());
      Set<String> m = members.computeIfAbsent(gid.get(), k -> new HashSet<>());
      if (f.length > 3 && !f[3].isEmpty()) {
        m.addAll(List.of(f[3].split(",")));
      }
    }
    return new Accounts(users, primary, groups, members);
  }

  /** The uids that belong to group {@code gid}: its listed members and its primary users. */
  Set<Long> membersOf(long gid) {
    Set<Long> out = new HashSet<>();
    for (String name : groupMembers.getOrDefault(gid, Set.of())) {
      Long uid = userIds.get(name);
      if (uid != null) {
        out.add(uid);
      }
    }
    primaryGroup.forEach(
        (uid, g) -> {
          if (g == gid) {
            out.add(uid);
          }
        });
    return out;
  }

  private static List<String[]> lines(Path file, int minFields) {
    List<String> all;
    try {
      all = Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      return List.of();
    } catch (IOException e) {
      throw new IllegalStateException(file + ": cannot read: " + e.getMessage(), e);
    }
    return all.stream()
        .filter(l -> !l.isBlank() && !l.startsWith("#"))
        .map(l -> l.split(":", -1))
        .filter(f -> f.length >= minFields)
        .toList();
  }

  private static Optional<Long> id(String s) {
    try {
      long v = Long.parseLong(s);
      return v >= 0 && v <= 0xFFFF_FFFFL ? Optional.of(v) : Optional.empty();
    } catch (NumberFormatException e) {
      return Optional.empty();
    }
  }
}
