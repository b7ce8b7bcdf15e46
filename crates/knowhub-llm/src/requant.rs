//! Loading GGUF tensors on the CPU with slow quantization formats converted to Q8_0.
//!
//! Why: candle's CPU matmul has SIMD kernels (AVX2/AVX-512, NEON) for Q4_0, Q8_0 and the k-quants,
//! but computes Q4_1, Q5_0 and Q5_1 with plain scalar code. That matters for the default model:
//! Qwen2.5-0.5B's hidden size (896) is not a multiple of 256, so its "Q4_K_M" GGUF stores most
//! weights as Q5_0, and on a 2-core CPU a 4864×896 Q5_0 matmul measured about 5× slower than the
//! same matrix in Q8_0 for one token (3× for a 512-token prompt chunk); end to end the 0.5B model
//! went from 43 to 96 prompt tokens/s and from 27 to 40 generated tokens/s. Converting those tensors to Q8_0 while loading
//! costs some load time and ~55 % more memory for them, and the values barely change (Q8_0 has 8×
//! finer steps than Q5_0), so answers stay the same model's answers.
//!
//! How: candle's `ModelWeights::from_gguf` reads each tensor through `Content::tensor(reader, …)`,
//! i.e. "seek to `tensor_data_offset + info.offset`, read the bytes, interpret them as
//! `info.ggml_dtype`". [`prepare`] rewrites the `TensorInfo`s of the tensors to convert (dtype Q8_0,
//! offsets pointing past the end of the file) and [`RequantReader`] serves that virtual region by
//! reading the original bytes and converting them, a slice of rows at a time. Everything else is
//! read from the file unchanged. Only the CPU needs this; GPU back ends have kernels for all types.

use std::io::{self, Read, Seek, SeekFrom};

use candle_core::Device;
use candle_core::quantized::gguf_file::{Content, TensorInfo};
use candle_core::quantized::{GgmlDType, QTensor, ggml_file};

/// Formats candle computes without SIMD on the CPU.
fn is_slow_on_cpu(dtype: GgmlDType) -> bool {
    matches!(dtype, GgmlDType::Q4_1 | GgmlDType::Q5_0 | GgmlDType::Q5_1)
}

/// Values converted per step (bounds the temporary f32 buffer to 4 MiB).
const CHUNK_ELEMS: usize = 1 << 20;

/// One converted tensor in the virtual region.
#[derive(Debug)]
struct Segment {
    /// Virtual start (absolute, at or past the end of the file).
    start: u64,
    /// Length of the Q8_0 data.
    len: u64,
    /// Absolute offset of the original data in the file.
    src: u64,
    src_dtype: GgmlDType,
    rows: usize,
    cols: usize,
}

/// Rewrites `content` so that slow-on-CPU weight matrices load as Q8_0 through the returned
/// reader. Returns the number of tensors converted.
pub(crate) fn prepare<R: Read + Seek>(
    content: &mut Content,
    inner: R,
) -> io::Result<(RequantReader<R>, usize)> {
    let mut inner = inner;
    let file_len = inner.seek(SeekFrom::End(0))?;
    // The token table is dequantized to f32 by the loaders; it is only worth converting when the
    // output layer reuses it (tied embeddings).
    let tied = !content.tensor_infos.contains_key("output.weight");
    let mut names: Vec<String> = content
        .tensor_infos
        .iter()
        .filter(|(name, info)| {
            is_slow_on_cpu(info.ggml_dtype)
                && info.shape.dims().len() == 2
                && (tied || name.as_str() != "token_embd.weight")
        })
        .map(|(name, _)| name.clone())
        .collect();
    names.sort();

    let q8 = GgmlDType::Q8_0;
    let mut next = file_len.div_ceil(64) * 64;
    let mut segments = Vec::with_capacity(names.len());
    for name in &names {
        let Some(info) = content.tensor_infos.get(name) else {
            continue;
        };
        let dims = info.shape.dims();
        let (rows, cols) = (dims[0], dims[1]);
        if cols % q8.block_size() != 0 || cols % info.ggml_dtype.block_size() != 0 {
            continue;
        }
        let len = (rows * cols / q8.block_size() * q8.type_size()) as u64;
        let Some(offset) = next.checked_sub(content.tensor_data_offset) else {
            continue;
        };
        segments.push(Segment {
            start: next,
            len,
            src: content.tensor_data_offset + info.offset,
            src_dtype: info.ggml_dtype,
            rows,
            cols,
        });
        let shape = info.shape.clone();
        content.tensor_infos.insert(
            name.clone(),
            TensorInfo {
                ggml_dtype: q8,
                shape,
                offset,
            },
        );
        next = (next + len).div_ceil(64) * 64;
    }
    let converted = segments.len();
    Ok((
        RequantReader {
            inner,
            file_len,
            virtual_len: next,
            pos: 0,
            inner_pos: None,
            segments,
            current: None,
        },
        converted,
    ))
}

/// The file, plus a virtual region past its end holding converted tensors (see the module docs).
#[derive(Debug)]
pub(crate) struct RequantReader<R> {
    inner: R,
    file_len: u64,
    virtual_len: u64,
    pos: u64,
    /// Where `inner` is positioned, when known.
    inner_pos: Option<u64>,
    segments: Vec<Segment>,
    /// The segment being read and its converted bytes.
    current: Option<(usize, Vec<u8>)>,
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

impl<R: Read + Seek> RequantReader<R> {
    fn convert(&mut self, index: usize) -> io::Result<Vec<u8>> {
        let seg = &self.segments[index];
        let src_row = seg.cols / seg.src_dtype.block_size() * seg.src_dtype.type_size();
        let rows_per_chunk = (CHUNK_ELEMS / seg.cols).max(1);
        let mut out = Vec::with_capacity(usize::try_from(seg.len).map_err(invalid)?);
        self.inner.seek(SeekFrom::Start(seg.src))?;
        self.inner_pos = None;
        let mut raw = Vec::new();
        let mut row = 0;
        while row < seg.rows {
            let n = rows_per_chunk.min(seg.rows - row);
            raw.resize(n * src_row, 0);
            self.inner.read_exact(&mut raw)?;
            let chunk =
                ggml_file::qtensor_from_ggml(seg.src_dtype, &raw, vec![n, seg.cols], &Device::Cpu)
                    .and_then(|q| q.dequantize(&Device::Cpu))
                    .and_then(|t| QTensor::quantize(&t, GgmlDType::Q8_0))
                    .map_err(invalid)?;
            out.extend_from_slice(&chunk.data().map_err(invalid)?);
            row += n;
        }
        if out.len() as u64 != seg.len {
            return Err(invalid(format!(
                "converted tensor has {} bytes, expected {}",
                out.len(),
                seg.len
            )));
        }
        Ok(out)
    }
}

impl<R: Read + Seek> Read for RequantReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.pos < self.file_len {
            if self.inner_pos != Some(self.pos) {
                self.inner.seek(SeekFrom::Start(self.pos))?;
            }
            let room = usize::try_from(self.file_len - self.pos).unwrap_or(usize::MAX);
            let max = buf.len().min(room);
            let n = self.inner.read(&mut buf[..max])?;
            self.pos += n as u64;
            self.inner_pos = Some(self.pos);
            return Ok(n);
        }
        let Some(index) = self
            .segments
            .iter()
            .position(|s| s.start <= self.pos && self.pos < s.start + s.len)
        else {
            return Ok(0); // padding between segments or past the end
        };
        if self.current.as_ref().map(|(i, _)| *i) != Some(index) {
            let data = self.convert(index)?;
            self.current = Some((index, data));
        }
        let start = self.segments[index].start;
        let Some((_, data)) = &self.current else {
            return Ok(0);
        };
        let from = usize::try_from(self.pos - start).map_err(invalid)?;
        let n = buf.len().min(data.len() - from);
        buf[..n].copy_from_slice(&data[from..from + n]);
        self.pos += n as u64;
        if from + n == data.len() {
            self.current = None; // each tensor is read once
        }
        Ok(n)
    }
}

impl<R: Read + Seek> Seek for RequantReader<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.virtual_len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        let Some(target) = target else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the start of the model file",
            ));
        };
        self.pos = target;
        Ok(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Tensor;
    use candle_core::quantized::gguf_file;
    use std::io::Cursor;

    #[test]
    fn slow_tensors_come_back_as_q8_0_with_the_same_values() {
        let dev = Device::Cpu;
        let w = Tensor::randn(0f32, 1.0, (48, 64), &dev).unwrap();
        let q5 = QTensor::quantize(&w, GgmlDType::Q5_0).unwrap();
        let q4 = QTensor::quantize(&w, GgmlDType::Q4_0).unwrap();
        let mut bytes = Cursor::new(Vec::new());
        let arch = gguf_file::Value::String("llama".into());
        gguf_file::write(
            &mut bytes,
            &[("general.architecture", &arch)],
            &[("blk.0.ffn_up.weight", &q5), ("blk.0.ffn_down.weight", &q4)],
        )
        .unwrap();
        let mut file = Cursor::new(bytes.into_inner());
        let mut content = Content::read(&mut file).unwrap();
        let (mut reader, n) = prepare(&mut content, file).unwrap();
        assert_eq!(n, 1);

        let up = content
            .tensor(&mut reader, "blk.0.ffn_up.weight", &dev)
            .unwrap();
        assert_eq!(up.dtype(), GgmlDType::Q8_0);
        assert_eq!(up.shape().dims(), &[48, 64]);
        let want = q5.dequantize(&dev).unwrap();
        let got = up.dequantize(&dev).unwrap();
        let diff = (want - got)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert!(diff < 0.05, "{diff}");

        let down = content
            .tensor(&mut reader, "blk.0.ffn_down.weight", &dev)
            .unwrap();
        assert_eq!(down.dtype(), GgmlDType::Q4_0);
        assert_eq!(down.data().unwrap(), q4.data().unwrap());
    }
}
