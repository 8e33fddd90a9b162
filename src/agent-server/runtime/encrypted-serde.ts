// The checkpointer's serializer with encryption at rest: what the inner serializer produced, sealed,
// its type marked `+aes` (as LangGraph's Python EncryptedSerializer marks it), so checkpoint blobs and
// writes stored before encryption was turned on (no mark) still load.
import type { SerializerProtocol } from '@langchain/langgraph-checkpoint';
import type { AtRestEncryption } from '../services/encryption/at-rest.js';

const MARK = '+aes';

export class EncryptedSerde implements SerializerProtocol {
  constructor(
    readonly inner: SerializerProtocol,
    private readonly encryption: AtRestEncryption,
  ) {}

  async dumpsTyped(data: unknown): Promise<[string, Uint8Array]> {
    const [type, bytes] = await this.inner.dumpsTyped(data);
    return [type + MARK, this.encryption.encryptBytes(bytes)];
  }

  async loadsTyped(type: string, data: Uint8Array | string): Promise<unknown> {
    if (!type.endsWith(MARK)) return this.inner.loadsTyped(type, data);
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    return this.inner.loadsTyped(type.slice(0, -MARK.length), this.encryption.decryptBytes(bytes));
  }
}
