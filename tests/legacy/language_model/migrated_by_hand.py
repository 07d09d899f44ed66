# Migrated by hand to torch 0.4+ idioms (the reference the fixed original must match).
# Reduced from yunjey/pytorch-tutorial, commit 6c785eb810848f259431865b12bb8795f4abcb23
# (2018-02-23, torch 0.3), path tutorials/02-intermediate/language_model/main.py. Reduction:
# the Penn Treebank file replaced by seeded random word ids (the Corpus class is not needed),
# small sizes, one epoch; the sampling part (it writes a file) is left out. The model and the
# training loop are as written then.
import torch 
import torch.nn as nn
import numpy as np

torch.manual_seed(5)

# Hyper Parameters
embed_size = 16
hidden_size = 32
num_layers = 1
num_epochs = 1
batch_size = 4
seq_length = 6
learning_rate = 0.002

vocab_size = 50
ids = torch.randint(0, vocab_size, (batch_size, 8 * seq_length + 1))
num_batches = ids.size(1) // seq_length
# RNN Based Language Model
class RNNLM(nn.Module):
    def __init__(self, vocab_size, embed_size, hidden_size, num_layers):
        super(RNNLM, self).__init__()
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.lstm = nn.LSTM(embed_size, hidden_size, num_layers, batch_first=True)
        self.linear = nn.Linear(hidden_size, vocab_size)
        self.init_weights()
        
    def init_weights(self):
        self.embed.weight.data.uniform_(-0.1, 0.1)
        self.linear.bias.data.fill_(0)
        self.linear.weight.data.uniform_(-0.1, 0.1)
        
    def forward(self, x, h):
        # Embed word ids to vectors
        x = self.embed(x) 
        
        # Forward propagate RNN  
        out, h = self.lstm(x, h)
        
        # Reshape output to (batch_size*sequence_length, hidden_size)
        out = out.contiguous().view(out.size(0)*out.size(1), out.size(2))
        
        # Decode hidden states of all time step
        out = self.linear(out)  
        return out, h
    
model = RNNLM(vocab_size, embed_size, hidden_size, num_layers)


# Loss and Optimizer
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

# Truncated Backpropagation 
def detach(states):
    return [state.detach() for state in states] 

# Training
for epoch in range(num_epochs):
    # Initial hidden and memory states
    states = (torch.zeros(num_layers, batch_size, hidden_size),
              torch.zeros(num_layers, batch_size, hidden_size))
    
    for i in range(0, ids.size(1) - seq_length, seq_length):
        # Get batch inputs and targets
        inputs = ids[:, i:i+seq_length]
        targets = ids[:, (i+1):(i+1)+seq_length].contiguous()
        
        # Forward + Backward + Optimize
        model.zero_grad()
        states = detach(states)
        outputs, states = model(inputs, states) 
        loss = criterion(outputs, targets.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()

        step = (i+1) // seq_length
        if step % 2 == 0:
            print ('Epoch [%d/%d], Step[%d/%d], Loss: %.3f, Perplexity: %5.2f' %
                   (epoch+1, num_epochs, step, num_batches, loss.item(), np.exp(loss.item())))

