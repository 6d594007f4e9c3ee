/** Crockford's base32, as TypeID spells ids (lower case, no i, l, o, u). */
const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

/**
 * A fresh `run_…` id made by the client, so that it knows the run's id before the create's
 * reply: a Stop pressed meanwhile can still name the run (DESIGN §8), and a retried create is
 * the same run. 48 bits of time, then 80 random bits, in 26 characters.
 */
export function createRunId(now: number = Date.now()): string {
  const random = crypto.getRandomValues(new Uint8Array(10));
  let time = "";
  let rest = Math.floor(now);
  for (let index = 0; index < 10; index++) {
    time = ALPHABET[rest % 32]! + time;
    rest = Math.floor(rest / 32);
  }
  let bits = 0;
  let value = 0;
  let suffix = "";
  for (const byte of random) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      suffix += ALPHABET[(value >> bits) & 31]!;
    }
  }
  return `run_${time}${suffix}`;
}
