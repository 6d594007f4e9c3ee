/**
 * Test speech: `espeak-ng` says a sentence into a WAV, padded with silence before and after, for
 * chromium's fake microphone (`--use-file-for-fake-audio-capture`). Real speech, so the page's
 * real VAD has something to detect.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const ESPEAK = "/usr/bin/espeak-ng";
export const hasEspeak = existsSync(ESPEAK);

/** Writes `<directory>/<name>.wav`: `silenceBeforeS` of silence, `text` spoken, `silenceAfterS` of silence. Returns its path. */
export function writeSpeechWav(directory: string, name: string, text: string, options: { silenceBeforeS: number; silenceAfterS: number }): string {
  const spoken = join(directory, `${name}-spoken.wav`);
  execFileSync(ESPEAK, ["-w", spoken, text]);
  const { format, samples } = readWav(readFileSync(spoken));
  const rate = format.readUInt32LE(4);
  const blockAlign = format.readUInt16LE(12);
  const silence = (seconds: number) => Buffer.alloc(Math.round(rate * seconds) * blockAlign);
  const data = Buffer.concat([silence(options.silenceBeforeS), samples, silence(options.silenceAfterS)]);
  const path = join(directory, `${name}.wav`);
  writeFileSync(path, Buffer.concat([wavHeader(format, data.length), data]));
  return path;
}

/** The samples of a 16-bit PCM WAV file's first channel, as floats in [-1, 1), and its sample rate. */
export function readWavSamples(path: string): { rate: number; samples: Float32Array } {
  const { format, samples } = readWav(readFileSync(path));
  if (format.readUInt16LE(0) !== 1 || format.readUInt16LE(14) !== 16) throw new Error("not a 16-bit PCM WAV file");
  const blockAlign = format.readUInt16LE(12);
  const count = Math.floor(samples.length / blockAlign);
  const floats = new Float32Array(count);
  for (let index = 0; index < count; index++) floats[index] = samples.readInt16LE(index * blockAlign) / 32_768;
  return { rate: format.readUInt32LE(4), samples: floats };
}

/** The `fmt ` and `data` chunks of a RIFF WAVE file (espeak-ng writes a data size it cannot know when streaming: read to the end). */
function readWav(file: Buffer): { format: Buffer; samples: Buffer } {
  if (file.toString("ascii", 0, 4) !== "RIFF" || file.toString("ascii", 8, 12) !== "WAVE") throw new Error("not a WAV file");
  let format: Buffer | undefined;
  for (let offset = 12; offset + 8 <= file.length; ) {
    const id = file.toString("ascii", offset, offset + 4);
    const size = file.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === "fmt ") format = file.subarray(body, body + size);
    if (id === "data") {
      if (!format) throw new Error("WAV data before its format");
      return { format, samples: file.subarray(body, Math.min(body + size, file.length)) };
    }
    offset = body + size + (size % 2);
  }
  throw new Error("WAV file without data");
}

function wavHeader(format: Buffer, dataLength: number): Buffer {
  const header = Buffer.alloc(20 + format.length + 8);
  header.write("RIFF", 0, "ascii");
  header.writeUInt32LE(header.length - 8 + dataLength, 4);
  header.write("WAVE", 8, "ascii");
  header.write("fmt ", 12, "ascii");
  header.writeUInt32LE(format.length, 16);
  format.copy(header, 20);
  header.write("data", 20 + format.length, "ascii");
  header.writeUInt32LE(dataLength, 24 + format.length);
  return header;
}
