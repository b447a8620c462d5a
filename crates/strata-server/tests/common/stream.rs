//! Reading stream replies in tests: the entry IDs of an XRANGE-shaped array and of an
//! XREAD/XREADGROUP reply on one stream. Each helper panics, naming the reply, on a shape it
//! does not expect.

use redis::Value;

/// The IDs of an XREADGROUP/XREAD reply on one stream.
pub fn read_ids(v: &Value) -> Vec<String> {
    let Value::Array(streams) = v else {
        panic!("not a read reply: {v:?}")
    };
    let Value::Array(pair) = &streams[0] else {
        panic!("not a stream: {v:?}")
    };
    ids(&pair[1])
}

/// The IDs of an array of entries (an XRANGE reply, or one stream of a read reply).
pub fn ids(v: &Value) -> Vec<String> {
    let Value::Array(entries) = v else {
        panic!("not an array: {v:?}")
    };
    entries
        .iter()
        .map(|e| match e {
            Value::Array(pair) => match &pair[0] {
                Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                other => panic!("not an ID: {other:?}"),
            },
            other => panic!("not an entry: {other:?}"),
        })
        .collect()
}
