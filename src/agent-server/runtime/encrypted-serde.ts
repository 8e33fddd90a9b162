// The checkpointer's serializer with encryption at rest: what the inner serializer produced, sealed,
// its type marked `+aes` (as LangGraph's Python EncryptedSerializer marks it; `+custom` by the
// project's handlers), so checkpoint blobs and writes stored before encryption was turned on (no
// mark) still load.
import type { SerializerProtocol } from '@langchain/langgraph-checkpoint';
import type { AtRestCipher } from '../services/encryption/at-rest.js';

const CHECKPOINT = { model: 'checkpoint', field: 'blob' } as const;

export class EncryptedSerde implements SerializerProtocol {
  constructor(
    readonly inner: SerializerProtocol,
    private readonly cipher: AtRestCipher,
  ) {}

  async dumpsTyped(data: unknown): Promise<[string, Uint8Array]> {
    const [type, bytes] = await this.inner.dumpsTyped(data);
    return [`${type}+${this.cipher.mark}`, await this.cipher.sealBytes(bytes, CHECKPOINT)];
  }

  async loadsTyped(type: string, data: Uint8Array | string): Promise<unknown> {
    const mark = type.lastIndexOf('+');
    if (mark < 0) return this.inner.loadsTyped(type, data);
    // The envelope says which cipher sealed it (an AES one read by the project's handlers after a switch).
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    return this.inner.loadsTyped(type.slice(0, mark), await this.cipher.openBytes(bytes, CHECKPOINT));
  }
}
