// How ingestion reads a multipart body's parts, in the forms clients write besides the SDKs' own:
// header names in any case, dispositions with other parameters or escaped quotes, a declared length
// in either place (or a wrong one), field parts before their run, and the errors for what is malformed.
import { describe, expect, it } from 'vitest';
import { RawJson } from '../../../src/platform/ingest/derive.js';
import { multipartToBatch, parseMultipart } from '../../../src/platform/ingest/ingest-wire.js';

const BOUNDARY = 'b0undary';
const RUN = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';

/** A body of parts given as their raw header lines and data. */
const body = (...parts: [headers: string, data: string][]) =>
  Buffer.from(`${parts.map(([headers, data]) => `--${BOUNDARY}\r\n${headers}\r\n\r\n${data}\r\n`).join('')}--${BOUNDARY}--\r\n`);

const json = (name: string, data: string, extra = '') => [`Content-Disposition: form-data; name="${name}"\r\nContent-Type: application/json${extra}`, data] as [string, string];

describe('parseMultipart', () => {
  it('reads the SDK form, with its length parameter', () => {
    const parts = parseMultipart(body(json(`post.${RUN}`, '{"a":1}', '; length=7')), BOUNDARY);
    expect(parts).toEqual([{ name: `post.${RUN}`, contentType: 'application/json; length=7', data: Buffer.from('{"a":1}') }]);
  });

  it('matches header names in any case and reads other dispositions with the regular expression', () => {
    const parts = parseMultipart(
      body(
        ['CONTENT-disposition:   form-data;  NAME = plain  \r\ncontent-TYPE :text/csv ', 'x'],
        ['Content-Disposition: form-data; filename="data.csv"; name="fi\\"le"', 'a,b'],
        ['X-Other: 1\r\nContent-Disposition: form-data; name="last"\r\nContent-Disposition: form-data; name="wins"', ''],
      ),
      BOUNDARY,
    );
    expect(parts.map(({ name, contentType, filename }) => ({ name, contentType, filename }))).toEqual([
      { name: 'plain', contentType: 'text/csv', filename: undefined },
      { name: 'fi"le', contentType: 'text/plain', filename: 'data.csv' },
      { name: 'wins', contentType: 'text/plain', filename: undefined },
    ]);
  });

  it('trusts a declared length only when the boundary follows it, from Content-Length first', () => {
    const data = `{"text":"--${BOUNDARY}-ish"}`;
    const right = parseMultipart(body([`Content-Disposition: form-data; name="a"\r\nContent-Length: ${data.length}`, data]), BOUNDARY);
    expect(right[0]!.data.toString()).toBe(data);
    const wrong = parseMultipart(body(json('b', '{"x":2}', '; Length = 3')), BOUNDARY);
    expect(wrong[0]!.data.toString()).toBe('{"x":2}');
  });

  it('refuses a part without a form-data name, or a body without the boundary', () => {
    expect(() => parseMultipart(body(['Content-Disposition: attachment; name="a"', '1']), BOUNDARY)).toThrow(/no form-data name/);
    expect(() => parseMultipart(body(['Content-Type: application/json', '1']), BOUNDARY)).toThrow(/no form-data name/);
    expect(() => parseMultipart(Buffer.from('nothing here'), BOUNDARY)).toThrow(/boundary not found/);
  });
});

describe('multipartToBatch', () => {
  it('sets field parts on their run whichever comes first, a field part winning over the run’s own field', () => {
    const batch = multipartToBatch(
      parseMultipart(
        body(
          json(`post.${RUN}.outputs`, '{"o":1}'),
          json(`post.${RUN}`, '{"name":"r","outputs":{"inline":true},"error":"e"}'),
          json(`post.${RUN}.error`, '"from part"'),
        ),
        BOUNDARY,
      ),
    );
    const run = batch.post![0]!;
    expect(run.id).toBe(RUN);
    expect((run.outputs as RawJson).value).toEqual({ o: 1 });
    expect(run.error).toBe('from part');
  });

  it('names the first field part whose run never came, and refuses unknown parts', () => {
    const other = RUN.replace('4a5b', '4a5c');
    expect(() => multipartToBatch(parseMultipart(body(json(`post.${other}.inputs`, '{}'), json(`post.${RUN}.inputs`, '{}'), json(`post.${RUN}`, '{}')), BOUNDARY))).toThrow(
      `body.post.${other}.inputs: has no post.${other} part`,
    );
    expect(() => multipartToBatch(parseMultipart(body(json(`post.${RUN}.in.puts`, '{}')), BOUNDARY))).toThrow(/unknown part/);
    expect(() => multipartToBatch(parseMultipart(body(json(`post.${RUN}.nope`, '{}')), BOUNDARY))).toThrow(/unknown run field nope/);
    expect(() => multipartToBatch(parseMultipart(body(json(`post.${RUN}`, '{}'), json(`post.${RUN}`, '{}')), BOUNDARY))).toThrow(/appears twice/);
  });

  it('keeps an attachment’s dotted name and its content type without parameters', () => {
    const batch = multipartToBatch(parseMultipart(body([`Content-Disposition: form-data; name="attachment.${RUN}.a.b.png"\r\nContent-Type: image/png; length=3`, 'png']), BOUNDARY));
    expect(batch.attachments).toEqual([{ runId: RUN, name: 'a.b.png', contentType: 'image/png', data: Buffer.from('png') }]);
  });
});
