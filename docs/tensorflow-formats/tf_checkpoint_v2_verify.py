# Reference checker for TF V2 checkpoints (tensor bundle). Pure Python, no deps.
# usage: python3 tf_checkpoint_v2_verify.py PREFIX.index [PREFIX.data-00000-of-00001]
import struct, sys
# --- crc32c (Castagnoli), table driven ---
POLY=0x82F63B78
T=[]
for i in range(256):
    c=i
    for _ in range(8): c=(c>>1)^POLY if c&1 else c>>1
    T.append(c)
def crc_extend(crc,data):
    crc^=0xffffffff
    for b in data: crc=T[(crc^b)&0xff]^(crc>>8)
    return crc^0xffffffff
def mask(c): return ((((c>>15)|(c<<17))&0xffffffff)+0xa282ead8)&0xffffffff
def unmask(m): r=(m-0xa282ead8)&0xffffffff; return ((r>>17)|(r<<15))&0xffffffff
def varint(b,p):
    r=s=0
    while True:
        x=b[p]; p+=1; r|=(x&0x7f)<<s; s+=7
        if x<0x80: return r,p
def put_varint(v):
    o=bytearray()
    while v>=0x80: o.append((v&0x7f)|0x80); v>>=7
    o.append(v); return bytes(o)
def read_block(f,off,size):
    data=f[off:off+size]; typ=f[off+size]; (m,)=struct.unpack('<I',f[off+size+1:off+size+5])
    assert typ==0, typ
    assert unmask(m)==crc_extend(0,data+bytes([typ])), "block crc"
    return data
def block_entries(data):
    nr,=struct.unpack('<I',data[-4:]); restarts=struct.unpack('<%dI'%nr,data[-4-4*nr:-4]); lim=len(data)-4-4*nr
    p=0; key=b''; out=[]
    while p<lim:
        sh,p=varint(data,p); ns,p=varint(data,p); vl,p=varint(data,p)
        key=key[:sh]+data[p:p+ns]; p+=ns; val=data[p:p+vl]; p+=vl; out.append((key,val))
    return out,restarts
def parse_table(f):
    foot=f[-48:]; assert struct.unpack('<Q',foot[-8:])[0]==0xdb4775248b80fb57
    p=0; mo,p=varint(foot,p); ms,p=varint(foot,p); io,p=varint(foot,p); isz,p=varint(foot,p)
    meta=read_block(f,mo,ms); assert block_entries(meta)[0]==[], "metaindex not empty"
    idx,ir=block_entries(read_block(f,io,isz))
    kv=[]; blocks=[]
    for k,h in idx:
        o,q=varint(h,0); s,q=varint(h,q); e,r=block_entries(read_block(f,o,s)); kv+=e; blocks.append((k,o,s,r))
    return kv,blocks,(mo,ms,io,isz),idx,ir
# --- re-implementation of leveldb::TableBuilder (bytewise comparator, no compression, no filter)
class BB:
    def __init__(s,ri): s.ri=ri; s.reset()
    def reset(s): s.buf=bytearray(); s.rs=[0]; s.cnt=0; s.last=b''
    def empty(s): return len(s.buf)==0
    def size(s): return len(s.buf)+4*len(s.rs)+4
    def add(s,k,v):
        sh=0
        if s.cnt<s.ri:
            m=min(len(k),len(s.last))
            while sh<m and k[sh]==s.last[sh]: sh+=1
        else: s.rs.append(len(s.buf)); s.cnt=0
        s.buf+=put_varint(sh)+put_varint(len(k)-sh)+put_varint(len(v))+k[sh:]+v; s.last=k; s.cnt+=1
    def finish(s): return bytes(s.buf)+b''.join(struct.pack('<I',r) for r in s.rs)+struct.pack('<I',len(s.rs))
def sep(a,b):
    m=min(len(a),len(b)); i=0
    while i<m and a[i]==b[i]: i+=1
    if i<m and a[i]<0xff and a[i]+1<b[i]: return a[:i]+bytes([a[i]+1])
    return a
def succ(a):
    for i,c in enumerate(a):
        if c!=0xff: return a[:i]+bytes([c+1])
    return a
def build(kv,block_size=262144,ri=16,tf_large_flush=True):
    out=bytearray(); db=BB(ri); ib=BB(1); last=b''; pend=None
    def wb(blk):
        raw=blk.finish(); off=len(out); out.extend(raw); out.append(0)
        out.extend(struct.pack('<I',mask(crc_extend(0,raw+b'\x00')))); blk.reset(); return (off,len(raw))
    for n,(k,v) in enumerate(kv):
        if n>0 and tf_large_flush and len(k)+len(v)>=2*block_size and not db.empty(): pend=wb(db)
        if pend: ib.add(sep(last,k),put_varint(pend[0])+put_varint(pend[1])); pend=None
        last=k; db.add(k,v)
        if db.size()>=block_size: pend=wb(db)
    if not db.empty(): pend=wb(db)
    mh=wb(BB(ri))
    if pend: ib.add(succ(last),put_varint(pend[0])+put_varint(pend[1]))
    ih=wb(ib)
    ft=put_varint(mh[0])+put_varint(mh[1])+put_varint(ih[0])+put_varint(ih[1]); ft=ft+b'\0'*(40-len(ft))+struct.pack('<Q',0xdb4775248b80fb57)
    return bytes(out+ft)
# ---- BundleEntryProto decode + data-file CRC verification ----
def parse_entry(v):
    p=0; e={'shape':[], 'shard_id':0,'offset':0,'size':0,'crc32c':0,'dtype':0,'has_shape':False,'slices':0}
    while p<len(v):
        tag,p=varint(v,p); fn,wt=tag>>3,tag&7
        if wt==0:
            x,p=varint(v,p); e[{1:'dtype',3:'shard_id',4:'offset',5:'size'}[fn]]=x
        elif wt==5: e['crc32c']=struct.unpack('<I',v[p:p+4])[0]; p+=4
        elif wt==2:
            l,p=varint(v,p); sub=v[p:p+l]; p+=l
            if fn==2:
                e['has_shape']=True; q=0
                while q<len(sub):
                    t,q=varint(sub,q); L,q=varint(sub,q); d=sub[q:q+L]; q+=L
                    if t>>3==2:
                        sz=0; r=0
                        while r<len(d):
                            tt,r=varint(d,r)
                            if tt==8: sz,r=varint(d,r)
                            else: raise Exception('dim field')
                        e['shape'].append(sz)
            elif fn==7: e['slices']+=1
    return e
def verify(index_path, data_path=None):
    f=open(index_path,'rb').read()
    kv,blocks,h,_,_=parse_table(f)
    assert kv and kv[0][0]==b'', 'header entry "" must be first'
    print(index_path,'entries',len(kv),'data blocks',len(blocks),'(meta_off,meta_sz,idx_off,idx_sz)=',h)
    print('  header', kv[0][1].hex(), '(expect 08011a020801 for num_shards=1, LITTLE, producer=1)')
    print('  byte-identical to leveldb/TF TableBuilder(block_size=262144, restart=16):', build(kv)==f)
    if not data_path: return
    data=open(data_path,'rb').read(); ok=0
    for k,v in kv[1:]:
        e=parse_entry(v)
        if e['slices']: continue
        seg=data[e['offset']:e['offset']+e['size']]
        if e['dtype']==7:
            n=1
            for d in e['shape']: n*=d
            p=0; lens=[]; c=0
            for i in range(n):
                L,p=varint(seg,p); lens.append(L)
                c=crc_extend(c, struct.pack('<I',L) if L<=0xffffffff else struct.pack('<Q',L))
            assert unmask(struct.unpack('<I',seg[p:p+4])[0])==c, 'length checksum'
            c=crc_extend(c,seg[p:p+4]); c=crc_extend(c,seg[p+4:]); got=c
        else: got=crc_extend(0,seg)
        if mask(got)==e['crc32c']: ok+=1
        else: print('  CRC MISMATCH', k)
    print('  tensor crc ok:', ok, 'of', len(kv)-1)
if __name__=='__main__':
    verify(sys.argv[1], sys.argv[2] if len(sys.argv)>2 else None)
